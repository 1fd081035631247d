"""The world an episode runs in: a domain's databases and toolkits (agent side and user side).

``World.fresh(domain)`` costs O(1): the tables share the process-wide base records. Initial
states of tau2 tasks (initialisation data, initialisation actions, an earlier conversation) are
applied exactly as tau2-bench's ``Environment.set_state`` applies them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from agentgym.envs.tooluse import airline, mock, phone, phone_state, retail, retail_v1, telecom
from agentgym.envs.tooluse.data import read_text
from agentgym.envs.tooluse.db import Database, ModelDatabase, Style
from agentgym.envs.tooluse.toolkit import ToolKind, Toolkit, ToolResult

Requestor = Literal["assistant", "user"]
TERMINATE_TOOLS = frozenset({"transfer_to_human_agents"})
"""Tools that end the episode (tau-bench's ``terminate_tools``)."""


@dataclass(frozen=True)
class Domain:
    """Everything that defines one tool-use domain."""

    name: str
    style: Style
    policy_file: str
    database: Callable[[], Database | ModelDatabase]
    toolkit: type[Toolkit]
    record_models: dict[str, type[BaseModel]] = field(default_factory=dict)
    user_database: Callable[[], Database | ModelDatabase] | None = None
    user_toolkit: type[Toolkit] | None = None
    sync: Callable[[World], None] | None = None
    """Runs after every tool call and set-up action (tau2's ``sync_tools``: telecom's phone
    follows the carrier's records)."""
    compose_policy: Callable[[], str] | None = None
    """Builds the policy from several files (telecom: main policy + tech-support manual)."""

    @property
    def policy(self) -> str:
        """The agent policy (tau2 ``policy.md``, tau-bench ``wiki.md``)."""
        return self.compose_policy() if self.compose_policy else read_text(self.policy_file)


DOMAINS: dict[str, Domain] = {
    "retail": Domain(
        "retail", "tau2", "tau2/retail/policy.md", retail.database, retail.RetailTools,
        {"products": retail.Product, "users": retail.User, "orders": retail.Order},
    ),
    "airline": Domain(
        "airline", "tau2", "tau2/airline/policy.md", airline.database, airline.AirlineTools,
        {"flights": airline.Flight, "users": airline.User, "reservations": airline.Reservation},
    ),
    "mock": Domain(
        "mock", "tau2", "tau2/mock/policy.md", mock.database, mock.MockTools, mock.RECORD_MODELS,
        mock.user_database, mock.MockUserTools,
    ),
    "telecom": Domain(
        "telecom", "tau2", "tau2/telecom/main_policy.md", telecom.database, telecom.TelecomTools,
        {}, phone_state.user_database, phone.PhoneTools, telecom.sync, telecom.policy,
    ),
    "tau_bench_retail": Domain(
        "tau_bench_retail", "tau_bench", "tau_bench/retail/wiki.md", retail_v1.database,
        retail_v1.RetailV1Tools,
    ),
}  # fmt: skip


def get_domain(name: str) -> Domain:
    """The domain called ``name``, or a ``KeyError`` listing the known ones."""
    if name not in DOMAINS:
        raise KeyError(f"unknown tool-use domain {name!r}; known: {', '.join(sorted(DOMAINS))}")
    return DOMAINS[name]


def deep_merge(base: Any, update: Any) -> Any:
    """addict's ``Dict.update``: dicts merge recursively, anything else is replaced."""
    if isinstance(base, dict) and isinstance(update, dict):
        merged = dict(base)
        for key, value in update.items():
            merged[key] = deep_merge(base[key], value) if key in base else value
        return merged
    return update


class World:
    """One episode's databases and toolkits."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain
        self.db = domain.database()
        self.tools = domain.toolkit(self.db)
        self.user_db = domain.user_database() if domain.user_database else None
        self.user_tools = (
            domain.user_toolkit(self.user_db) if domain.user_toolkit and self.user_db else None
        )

    def reset(self) -> None:
        """Back to the domain's initial database (O(changes))."""
        self.db.reset()
        if self.user_db is not None:
            self.user_db.reset()
        if self.domain.user_toolkit is not None and self.user_db is not None:
            self.user_tools = self.domain.user_toolkit(self.user_db)

    def toolkit(self, requestor: Requestor) -> Toolkit:
        """The agent's or the user's toolkit."""
        if requestor == "user":
            if self.user_tools is None:
                raise ValueError("User tools not available")
            return self.user_tools
        return self.tools

    def call(
        self, name: str, arguments: dict[str, Any], requestor: Requestor = "assistant"
    ) -> ToolResult:
        """A tool call as the benchmark answers it (``Error: ...`` on failure)."""
        if requestor == "user" and self.user_tools is None:
            return ToolResult("Error: User tools not available", True)
        result = self.toolkit(requestor).call(name, arguments)
        if not result.error:
            self.sync()
        return result

    def sync(self) -> None:
        """Let the two sides catch up with each other (tau2's ``sync_tools``; most domains: no-op)."""
        if self.domain.sync is not None:
            self.domain.sync(self)

    def is_mutating(self, name: str, requestor: Requestor = "assistant") -> bool:
        """Whether the tool may change a database (unknown tools are assumed to, as tau2 does)."""
        kind = self.toolkit(requestor).kind(name)
        return kind is None or kind == ToolKind.WRITE

    def same_state(self, other: World) -> bool:
        """Whether both worlds' databases hash equal (agent and user side)."""
        if self.db.diff(other.db):
            return False
        return self.user_db is None or other.user_db is None or not self.user_db.diff(other.user_db)

    # ------------------------------------------------------------------ tau2 initial states
    def update_db(self, data: dict[str, Any], requestor: Requestor = "assistant") -> None:
        """tau2's ``update_db``: merge partial records into the database and re-validate them."""
        db = self.db if requestor == "assistant" else self.user_db
        if db is None:
            raise ValueError("User database not available")
        if isinstance(db, ModelDatabase):
            model = db.peek()
            db.data = type(model).model_validate(deep_merge(model.model_dump(), data))
            return
        for table_name, records in data.items():
            table, model = db[table_name], self.domain.record_models[table_name]
            for key, update in records.items():
                merged = (
                    deep_merge(table.peek(key).model_dump(), update) if key in table else update
                )
                table[key] = model.model_validate(merged)

    def apply_initial_state(self, initial_state: dict[str, Any] | None) -> None:
        """Initialisation data, then initialisation actions, then replay of the earlier messages."""
        if not initial_state:
            return
        data = initial_state.get("initialization_data") or {}
        if data.get("agent_data") is not None:
            self.update_db(data["agent_data"], "assistant")
        if data.get("user_data") is not None:
            self.update_db(data["user_data"], "user")
        for action in initial_state.get("initialization_actions") or []:
            requestor: Requestor = "user" if action.get("env_type") == "user" else "assistant"
            self.toolkit(requestor).run_function(action["func_name"], action.get("arguments", {}))
            self.sync()
        for message in initial_state.get("message_history") or []:
            requestor = "user" if message.get("role") == "user" else "assistant"
            for call in message.get("tool_calls") or []:
                if self.toolkit(requestor).kind(call["name"]) is None:
                    continue  # tau2 replays a hallucinated tool as a no-op
                if self.is_mutating(call["name"], requestor):
                    self.call(call["name"], call.get("arguments", {}), requestor)
        self.sync()

    def run_assertion(self, assertion: dict[str, Any]) -> bool:
        """A tau2 env assertion on the final state (``assert_value`` defaults to True)."""
        requestor: Requestor = "user" if assertion.get("env_type") == "user" else "assistant"
        result = self.toolkit(requestor).run_function(
            assertion["func_name"], assertion.get("arguments", {})
        )
        if not isinstance(result, bool):
            raise ValueError(
                f"Function {assertion['func_name']} returned {type(result)} instead of bool"
            )
        return result == assertion.get("assert_value", True)
