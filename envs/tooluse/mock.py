"""tau2-bench mock domain (tasks, users, a user-side notification inbox), as in ``tau2/domains/mock``.

The smallest tau2 domain: its ten tasks exercise every evaluation feature (initial message
history, initialisation data and actions, env assertions, user tools, ``compare_args``).
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agentgym.envs.tooluse.data import read_json
from agentgym.envs.tooluse.db import Database
from agentgym.envs.tooluse.toolkit import ToolKind, Toolkit, tool

TaskStatus = Literal["pending", "completed"]


class Task(BaseModel):
    task_id: str
    title: str
    description: str | None = None
    status: TaskStatus


class User(BaseModel):
    user_id: str
    name: str
    tasks: list[str]


class Notification(BaseModel):
    model_config = ConfigDict(extra="forbid")

    notification_id: str
    message: str
    status: Literal["unread", "read"] = "unread"
    task_id: str | None = None


class MockDB(BaseModel):
    tasks: dict[str, Task]
    users: dict[str, User]


class MockUserDB(BaseModel):
    notifications: dict[str, Notification] = {}


@cache
def base_tables() -> dict[str, dict[str, BaseModel]]:
    db = MockDB.model_validate(read_json("tau2/mock/db.json"))
    return {"tasks": dict(db.tasks), "users": dict(db.users)}


@cache
def base_user_tables() -> dict[str, dict[str, BaseModel]]:
    db = MockUserDB.model_validate(read_json("tau2/mock/user_db.json"))
    return {"notifications": dict(db.notifications)}


RECORD_MODELS: dict[str, type[BaseModel]] = {
    "tasks": Task,
    "users": User,
    "notifications": Notification,
}
"""Record model of each table (initialisation data is validated with these)."""


class MockTools(Toolkit):
    """Simple tools for the mock domain."""

    assertion_fixes = {
        "assert_task_status": lambda a: (
            "update_task_status",
            {"task_id": a["task_id"], "status": a["expected_status"]},
        ),
    }

    @tool(ToolKind.WRITE)
    def create_task(self, user_id: str, title: str, description: str | None = None) -> Task:
        """Create a new task for a user.

        Args:
            user_id: The ID of the user creating the task
            title: The title of the task
            description: Optional description of the task
        """
        if user_id not in self.db["users"]:
            raise ValueError(f"User {user_id} not found")
        task_id = f"task_{len(self.db['tasks']) + 1}"
        task = Task(task_id=task_id, title=title, description=description, status="pending")
        self.db["tasks"][task_id] = task
        self.db["users"][user_id].tasks.append(task_id)
        return task

    @tool(ToolKind.READ)
    def get_users(self) -> list[User]:
        """Get all users in the database."""
        return list(self.db["users"].peek_values())

    @tool(ToolKind.WRITE)
    def update_task_status(self, task_id: str, status: TaskStatus) -> Task:
        """Update the status of a task.

        Args:
            task_id: The ID of the task to update
            status: The new status of the task
        """
        if task_id not in self.db["tasks"]:
            raise ValueError(f"Task {task_id} not found")
        task: Task = self.db["tasks"][task_id]
        task.status = status
        return task

    def assert_number_of_tasks(self, user_id: str, expected_number: int) -> bool:
        """Whether the user has the expected number of tasks (an env assertion)."""
        if user_id not in self.db["users"]:
            raise ValueError(f"User {user_id} not found")
        return len(self.db["users"].peek(user_id).tasks) == expected_number

    def assert_task_status(self, task_id: str, expected_status: TaskStatus) -> bool:
        """Whether the task has the expected status (an env assertion)."""
        if task_id not in self.db["tasks"]:
            raise ValueError(f"Task {task_id} not found")
        return bool(self.db["tasks"].peek(task_id).status == expected_status)

    @tool(ToolKind.GENERIC)
    def transfer_to_human_agents(self, summary: str) -> str:
        """Transfer the user to a human agent, with a summary of the user's issue. Only transfer if the user explicitly asks for a human agent, or given the policy and the available tools, you cannot solve the user's issue.

        Args:
            summary: A summary of the user's issue.
        """
        return "Transfer successful"


class MockUserTools(Toolkit):
    """User-side tools: the simulated user's notification inbox."""

    assertion_fixes = {
        "assert_notification_status": lambda a: (
            ("dismiss_notification", {"notification_id": a["notification_id"]})
            if a["expected_status"] == "read"
            else None
        ),
    }

    @tool(ToolKind.READ)
    def check_notifications(self) -> list[Notification]:
        """Check all notifications in the user's inbox."""
        return list(self.db["notifications"].peek_values())

    @tool(ToolKind.WRITE)
    def dismiss_notification(self, notification_id: str) -> str:
        """Dismiss (mark as read) a notification.

        Args:
            notification_id: The ID of the notification to dismiss.
        """
        if notification_id not in self.db["notifications"]:
            raise ValueError(f"Notification {notification_id} not found")
        self.db["notifications"][notification_id].status = "read"
        return f"Notification {notification_id} dismissed"

    def add_notification(
        self, notification_id: str, message: str, task_id: str | None = None
    ) -> Notification:
        """Add a notification to the inbox (used by initialisation actions)."""
        notification = Notification(
            notification_id=notification_id, message=message, task_id=task_id
        )
        self.db["notifications"][notification_id] = notification
        return notification

    def assert_notification_status(self, notification_id: str, expected_status: str) -> bool:
        """Whether the notification has the expected status (an env assertion)."""
        if notification_id not in self.db["notifications"]:
            raise ValueError(f"Notification {notification_id} not found")
        return bool(self.db["notifications"].peek(notification_id).status == expected_status)


def database() -> Database:
    return Database(base_tables(), "tau2")


def user_database() -> Database:
    return Database(base_user_tables(), "tau2")
