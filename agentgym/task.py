"""Tasks and task suites: the data an evaluation runs over.

A suite is a JSONL file (one :class:`Task` per line). Built-in suites live in the ``tasks/`` folder
and are named ``<env>/<split>`` (``clarify/test``); any other path works too. Loading validates
every row and reports *all* bad rows with file, line and field, so a broken suite never starts a run.
"""

from __future__ import annotations

import gzip
import io
import json
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from importlib import resources
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class Task(BaseModel):
    """One task instance: what the agent is asked to do and what the scorer needs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    """Unique within its suite; episodes are stored under this id."""
    env: str = Field(min_length=1)
    """Registered environment id that runs this task, e.g. ``agentgym/Clarify-v0``."""
    split: str = "test"
    """Which split the task belongs to (``train``, ``dev``, ``test`` ...)."""
    instruction: str
    """What the agent is asked to do, in words."""
    config: dict[str, Any] = Field(default_factory=dict)
    """Env-specific setup; the env validates it with its own pydantic model."""
    gold: dict[str, Any] = Field(default_factory=dict)
    """What the scorer needs (the answer, gold actions ...). Never shown to the agent."""
    tags: list[str] = Field(default_factory=list)
    """Free labels the report groups by (domain, skill ...)."""
    difficulty: int | str | None = None
    """Optional difficulty label or level."""


_from_client: ContextVar[bool] = ContextVar("agentgym_task_from_client", default=False)


@contextmanager
def tasks_from_client() -> Iterator[None]:
    """Validate the tasks met inside as a remote client's (``agentgym env serve`` wraps a task
    object a client sends): data only, so an env config that names a host resource refuses."""
    token = _from_client.set(True)
    try:
        yield
    finally:
        _from_client.reset(token)


def task_from_client() -> bool:
    """Whether the task being validated came from a remote client (see :func:`tasks_from_client`)."""
    return _from_client.get()


class TaskFileError(ValueError):
    """A suite file has bad rows; ``problems`` lists every one as ``file:line: field: message``.

    The message is one line (the command line prints it as its one error line): the count, the
    first few problems, and ``allowed``, what a good row is. ``agentgym tasks validate FILE``
    prints every problem on its own line.
    """

    SHOWN = 3

    def __init__(self, problems: list[str], allowed: str = "") -> None:
        self.problems = problems
        shown = "; ".join(problems[: self.SHOWN])
        more = (
            f"; and {len(problems) - self.SHOWN} more (agentgym tasks validate lists them all)"
            if len(problems) > self.SHOWN
            else ""
        )
        rule = f". {allowed}" if allowed else ""
        super().__init__(f"{len(problems)} bad row(s) in task file: {shown}{more}{rule}")


def row_shape() -> str:
    """What a suite file's row must be, from :class:`Task`'s fields."""
    required = [n for n, f in Task.model_fields.items() if f.is_required()]
    optional = [n for n, f in Task.model_fields.items() if not f.is_required()]
    return (
        f"A task row is one JSON object per line with {', '.join(required)} "
        f"(optional: {', '.join(optional)}; no other field)"
    )


class TaskSuite:
    """An ordered, id-unique collection of tasks with a name (usually ``<env>/<split>``)."""

    def __init__(self, name: str, tasks: Iterable[Task]) -> None:
        self.name = name
        self.tasks = list(tasks)
        self._by_id = {t.id: t for t in self.tasks}
        if len(self._by_id) != len(self.tasks):
            counts = Counter(t.id for t in self.tasks)
            dups = sorted(i for i, n in counts.items() if n > 1)
            raise TaskFileError(
                [f"{name}: duplicate task id {d!r}" for d in dups],
                "Task ids must be unique within a suite",
            )

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._by_id

    def __getitem__(self, task_id: str) -> Task:
        try:
            return self._by_id[task_id]
        except KeyError:
            raise KeyError(f"no task {task_id!r} in suite {self.name!r}") from None

    def filter(self, tags: Iterable[str] = (), limit: int | None = None) -> TaskSuite:
        """Tasks carrying all ``tags``, the first ``limit`` of them."""
        wanted = set(tags)
        kept = [t for t in self.tasks if wanted <= set(t.tags)]
        return TaskSuite(self.name, kept[:limit] if limit is not None else kept)

    @classmethod
    def load(cls, spec: str | Path) -> TaskSuite:
        """Load a suite by name (``clarify/test``) or by path to a JSONL file."""
        path = resolve_suite_path(spec)
        name = str(spec) if not Path(spec).suffix else suite_name(Path(spec).name)
        return cls(name, read_tasks(path))


def no_tasks(suite: TaskSuite, spec: str, tags: Sequence[str]) -> str:
    """Why ``suite`` (loaded from ``spec``) filtered by ``tags`` keeps no task, and what would."""
    if not len(suite):
        return f"{spec} holds no task: a suite file has one JSON task per line"
    present = sorted({t for task in suite for t in task.tags})
    have = f"its tags: {', '.join(present)}" if present else "its tasks carry no tags"
    return f"no task in {spec} has all of the tags {', '.join(tags)} ({have})"


SUITE_SUFFIXES = (".jsonl", ".jsonl.gz")
"""A suite file is JSONL, or gzipped JSONL for the large ones (a smaller tree and clone)."""


def suite_name(filename: str) -> str:
    """``train`` for ``train.jsonl`` or ``train.jsonl.gz``."""
    for suffix in SUITE_SUFFIXES:
        if filename.endswith(suffix):
            return filename[: -len(suffix)]
    return Path(filename).stem


def open_suite(path: Path, mode: str) -> IO[Any]:
    """Open a suite file, through gzip where it ends in ``.gz``: written with no time in its
    header, so a generator writes the same bytes every time."""
    if str(path).endswith(".gz"):
        stream = gzip.GzipFile(path, mode.replace("t", ""), mtime=0)
        return io.TextIOWrapper(stream, encoding="utf-8") if "t" in mode else stream
    return open(path, mode, encoding="utf-8" if "t" in mode else None)  # noqa: SIM115


def suite_bytes(path: Path) -> bytes:
    """A suite file's JSONL bytes, uncompressed: what manifests hash, gzipped or not."""
    with open_suite(path, "rb") as fh:
        return fh.read()


def builtin_suites() -> list[str]:
    """Names of the suites shipped in ``tasks/`` (``<env>/<split>``)."""
    root = resources.files("agentgym.tasks")
    names = []
    for env_dir in root.iterdir():
        if env_dir.is_dir() and not env_dir.name.startswith("_"):
            names += [
                f"{env_dir.name}/{suite_name(f.name)}"
                for f in env_dir.iterdir()
                if f.name.endswith(SUITE_SUFFIXES)
            ]
    return sorted(names)


def resolve_suite_path(spec: str | Path) -> Path:
    """A file path for a suite name or path, or a ``FileNotFoundError`` listing the built-in suites."""
    path = Path(spec)
    if path.is_file():
        return path
    if not path.suffix:
        for suffix in SUITE_SUFFIXES:
            candidate = Path(str(resources.files("agentgym.tasks").joinpath(f"{spec}{suffix}")))
            if candidate.is_file():
                return candidate
    raise FileNotFoundError(
        f"no task suite {str(spec)!r}: give a JSONL path or one of {', '.join(builtin_suites())}"
    )


def read_tasks(path: Path) -> list[Task]:
    """Parse and validate every line; raise one :class:`TaskFileError` naming all bad rows."""
    tasks, problems = _parse(path)
    if problems:
        raise TaskFileError(_format(path, problems), row_shape())
    return [t for _, t in tasks]


def check_suite(spec: str | Path) -> list[str]:
    """Every problem of a suite file as ``file:line: field: message``, env configs included.

    Beyond the row schema, ids must be unique and each task must pass its env's ``validate_task``
    (config and gold). An empty list means the suite is good.
    """
    from agentgym.registry import spec as env_spec

    path = resolve_suite_path(spec)
    tasks, problems = _parse(path)
    first_line: dict[str, int] = {}
    for lineno, task in tasks:
        if task.id in first_line:
            problems.append((lineno, f"id: duplicate of line {first_line[task.id]} ({task.id!r})"))
        first_line.setdefault(task.id, lineno)
        try:
            env_spec(task.env).load().validate_task(task)
        except KeyError as e:
            problems.append((lineno, f"env: {e.args[0]}"))
        except ValidationError as e:
            problems += [(lineno, f"{_loc(err, 'config')}: {err['msg']}") for err in e.errors()]
        except ValueError as e:
            problems.append((lineno, str(e)))
    return _format(path, problems)


Problem = tuple[int, str]
"""(line number, "field: message")."""


def _parse(path: Path) -> tuple[list[tuple[int, Task]], list[Problem]]:
    tasks: list[tuple[int, Task]] = []
    problems: list[Problem] = []
    with open_suite(path, "rb") as fh:  # bytes: one bad line must not hide the others
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                problems.append(
                    (lineno, f"<row>: not UTF-8: byte 0x{raw[e.start]:02x} at column {e.start + 1}")
                )
                continue
            if not line.strip():
                continue
            try:
                row = json.loads(line, parse_int=_parse_int)
                if (huge := _huge_int(row)) is not None:
                    problems.append((lineno, huge))
                    continue
                tasks.append((lineno, Task.model_validate(row)))
            except json.JSONDecodeError as e:
                problems.append((lineno, f"<row>: not valid JSON: {e.msg} at column {e.colno}"))
            except RecursionError:
                problems.append((lineno, "<row>: not a task: JSON nested too deep to read"))
            except ValidationError as e:
                problems += [(lineno, f"{_loc(err)}: {err['msg']}") for err in e.errors()]
    return tasks, problems


class _HugeInt:
    """An integer too long to convert, kept as its digit count so the row can name its field."""

    def __init__(self, digits: int, limit: int) -> None:
        self.digits, self.limit = digits, limit


def _parse_int(text: str) -> int | _HugeInt:
    limit = sys.get_int_max_str_digits()  # Python's int-string limit (0: none)
    digits = len(text.lstrip("-"))
    return _HugeInt(digits, limit) if limit and digits > limit else int(text)


def _huge_int(row: Any) -> str | None:
    """``field: what`` for the first too-long integer in ``row`` (searched iteratively)."""
    stack: list[tuple[Any, list[str]]] = [(row, [])]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _HugeInt):
            field = ".".join(path) or "<row>"
            return f"{field}: an integer of {value.digits} digits (at most {value.limit})"
        items = (
            value.items()
            if isinstance(value, dict)
            else enumerate(value)
            if isinstance(value, list)
            else ()
        )
        stack += [(v, [*path, str(k)]) for k, v in reversed(list(items))]
    return None


def _format(path: Path, problems: list[Problem]) -> list[str]:
    return [f"{path}:{line}: {msg}" for line, msg in sorted(problems, key=lambda p: p[0])]


def _loc(err: Any, prefix: str = "") -> str:
    return ".".join([prefix] * bool(prefix) + [str(p) for p in err["loc"]]) or "<row>"


def write_tasks(path: Path, tasks: Iterable[Task]) -> int:
    """Write tasks as JSONL (one compact row each, stable key order), gzipped where ``path``
    ends in ``.gz``; return how many."""
    n = 0
    with open_suite(path, "wt") as fh:
        for task in tasks:
            fh.write(task.model_dump_json() + "\n")
            n += 1
    return n


def write_manifest(out: Path, manifest: dict[str, Any], sort_keys: bool = False) -> dict[str, Any]:
    """Write ``out/manifest.json``, the provenance every task generator records beside its suites
    (generator, seed, counts, file hashes, sources); return ``manifest``."""
    text = json.dumps(manifest, indent=2, sort_keys=sort_keys) + "\n"
    (out / "manifest.json").write_text(text, encoding="utf-8")
    return manifest


def suite_counts(tasks: Sequence[Task]) -> dict[str, Any]:
    """A suite's size and its tags' counts (sorted by tag), as manifests record them."""
    tags = Counter(t for task in tasks for t in task.tags)
    return {"tasks": len(tasks), "tags": dict(sorted(tags.items()))}
