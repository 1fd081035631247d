"""Task formats of other stacks that suites are imported from and exported to.

A format (Harbor's task folders) turns a path into tasks of the env that runs them, and tasks of
that env back into the format. The plug-in whose env runs those tasks registers it, as envs ship
agents and notes: ``TASK_FORMATS.register("harbor", "module:attr")``; the command line's
``agentgym tasks import-harbor`` and ``export-harbor`` look it up here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from agentgym.plugins import Registry
from agentgym.task import Task


class TaskFormat(Protocol):
    """Import and export of one format."""

    def import_tasks(self, path: Path) -> tuple[list[Task], dict[str, str]]:
        """The tasks under ``path``, and by name those skipped, with the reason."""
        ...

    def export_tasks(self, tasks: list[Task], out: Path) -> str:
        """Write ``tasks`` under ``out``; one line saying what was written."""
        ...


TASK_FORMATS: Registry[TaskFormat] = Registry("task format", "agentgym.task_formats")
"""Formats by name; env plug-ins register theirs, other distributions by entry point."""
