"""Progress for ``eval`` and ``train``: a live rich bar on a terminal, plain lines elsewhere.

Rich redraws a bar only on a terminal; piped into a file or a CI log it shows the bar once, at the
end. :class:`PlainProgress` takes the same ``add_task``/``update`` calls and prints one line each
time another few percent are done, so a log shows how far a long run got and how long it has left.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.progress import Progress, ProgressColumn, TaskID


def progress(
    console: Console,
    columns: Sequence[str | ProgressColumn],
    describe: Callable[[dict[str, Any]], str],
) -> Progress | PlainProgress:
    """A rich bar with ``columns`` on a terminal, else plain lines ending with ``describe(fields)``."""
    if console.is_terminal:
        return Progress(*columns, console=console, transient=False)
    return PlainProgress(console, describe)


class PlainProgress:
    """``Progress.add_task``/``update`` as a line every ``every`` percent, at most one per
    ``min_interval_s`` (a run of a few seconds prints its first and last line only), and one at
    the end."""

    def __init__(
        self,
        console: Console,
        describe: Callable[[dict[str, Any]], str],
        every: float = 5.0,
        min_interval_s: float = 2.0,
    ) -> None:
        self.console, self.describe, self.every = console, describe, every
        self.min_interval_s = min_interval_s
        self._tasks: dict[TaskID, dict[str, Any]] = {}

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        for task_id, task in self._tasks.items():
            if task["printed"] != task["completed"]:
                self._print(task_id)

    def add_task(
        self, description: str, total: float | None = None, completed: float = 0, **fields: Any
    ) -> TaskID:
        """A task as rich's: its id is a ``TaskID``, so a caller holds the same type from both."""
        task_id = TaskID(len(self._tasks))
        self._tasks[task_id] = {
            "description": description,
            "total": total,
            "completed": completed,
            "first": completed,  # done before this invocation (a resumed run): not in the rate
            "printed": None,
            "printed_at": 0.0,
            "started": time.monotonic(),
            "fields": fields,
        }
        return task_id

    def update(
        self,
        task_id: TaskID,
        *,
        total: float | None = None,
        completed: float | None = None,
        **fields: Any,
    ) -> None:
        task = self._tasks[task_id]
        if total is not None:
            task["total"] = total
        if task["printed"] is None and total is not None:
            task["first"] = task["completed"] if completed is None else completed
        if completed is not None:
            task["completed"] = completed
        task["fields"].update(fields)
        if self._due(task):
            self._print(task_id)

    def _due(self, task: dict[str, Any]) -> bool:
        total, done = task["total"], task["completed"]
        if not total:
            return False
        if task["printed"] is None or done >= total:
            return task["printed"] != done
        step = max(total * self.every / 100, 1)
        soon = time.monotonic() - task["printed_at"] < self.min_interval_s
        return done // step > task["printed"] // step and not soon

    def _print(self, task_id: TaskID) -> None:
        task = self._tasks[task_id]
        total, done = task["total"], task["completed"]
        pct = f" ({100 * done / total:.0f}%)" if total else ""
        elapsed = time.monotonic() - task["started"]
        line = f"{task['description']}: {done:.0f}/{total or '?'}{pct}, {_clock(elapsed)} elapsed"
        if total and done - task["first"] > 0 and done < total:
            rate = (done - task["first"]) / elapsed
            line += f", {_clock((total - done) / rate)} left"
        extra = self.describe(task["fields"])
        self.console.print(f"{line}{'  ' + extra if extra else ''}", markup=False, highlight=False)
        task["printed"], task["printed_at"] = done, time.monotonic()


def _clock(seconds: float) -> str:
    """``1:02:03`` / ``2:03``."""
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
