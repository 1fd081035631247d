"""What a software-engineering task is: a repository snapshot, hidden tests, and a reference fix."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from agentgym.task import task_from_client

MAX_COMMAND_TIMEOUT = 600.0
"""Longest ``command_timeout`` a task may set, in seconds."""
MAX_GRADE_TIMEOUT = 1800.0
"""Longest ``grade_timeout`` a task may set, in seconds."""
GIT_ROOTS_VARIABLE = "AGENTGYM_SWE_GIT_ROOTS"
"""Folders (``os.pathsep``-separated) under which a task's ``git.path`` may name a checkout."""


def _inside_repo(path: str) -> str:
    """A path relative to the task repository's root that stays inside it."""
    parts = PurePosixPath(path).parts
    if not parts or path.startswith(("/", "\\")) or ".." in parts or "\\" in path:
        raise ValueError(
            f"{path!r} is not a path inside the repository: give a relative path with no '..'"
        )
    return path


RepoPath = Annotated[str, AfterValidator(_inside_repo)]
"""A file of the task repository, relative to its root (never an absolute or escaping path)."""
PathRole = Literal["repo", "tests", "verifier", "solution"]
"""What a container path of a scripted task stands for in the sandbox (see ``SweConfig.paths``)."""


def _absolute(paths: dict[str, PathRole]) -> dict[str, PathRole]:
    for path in paths:
        if not path.startswith("/") or path.rstrip("/") == "" or "\\" in path:
            raise ValueError(f"paths: {path!r} must be an absolute container path such as /app")
    return paths


def _edit_inside_repo(edit: Edit) -> Edit:
    """A task's edit writes a file of the task repository (an agent's edit is its own business:
    it runs in the sandbox, and a bad path is an observation there)."""
    _inside_repo(edit.path)
    return edit


class Edit(BaseModel):
    """Replace the one occurrence of ``old`` in ``path`` by ``new`` (``old == ""`` writes the file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(min_length=1)
    old: str
    new: str


class GitSource(BaseModel):
    """A repository on the host at a commit (SWE-bench instances imported from a local checkout).

    A host path is not data: it is read only under the folders the host's operator allowed
    (:func:`allowed_checkout`), and never from a task a client of ``agentgym env serve`` sent.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(min_length=1)
    """Absolute host path of a git checkout (``git archive`` reads it; it is never mounted)."""
    commit: str = Field(pattern=r"^[0-9a-fA-F]{7,40}$")
    """A commit id in hex (as SWE-bench's ``base_commit``): never a ref, never an option."""

    @model_validator(mode="after")
    def _host_path(self) -> GitSource:
        if task_from_client():
            raise ValueError(
                "git names a checkout on the server's host, which a client's task may not; "
                "serve a suite that holds the task and reset with its id"
            )
        if not os.path.isabs(self.path):
            raise ValueError(f"git.path must be an absolute host path, got {self.path!r}")
        return self


def git_roots() -> list[Path]:
    """The folders named by ``$AGENTGYM_SWE_GIT_ROOTS`` (none by default: no checkout is read)."""
    value = os.environ.get(GIT_ROOTS_VARIABLE, "")
    return [Path(p).resolve() for p in value.split(os.pathsep) if p.strip()]


def allowed_checkout(source: GitSource, roots: list[Path]) -> Path:
    """``source.path`` resolved (links followed), if it lies inside one of ``roots``; else a
    ``ValueError`` naming the path and what is allowed."""
    path = Path(source.path).resolve()
    if any(path == root or root in path.parents for root in roots):
        return path
    allowed = ", ".join(map(str, roots)) or "none"
    raise ValueError(
        f"git.path {source.path!r} is outside the folders allowed for host checkouts ({allowed}); "
        f"name the folder that holds it in ${GIT_ROOTS_VARIABLE} (separated by {os.pathsep!r})"
    )


class SweConfig(BaseModel):
    """``Task.config``: how to build the buggy repository and run the visible tests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """A bundled snapshot's name, a folder of ``envs/swe/data/repos/`` (``toolz``), or None."""
    git: GitSource | None = None
    """Or a git checkout on the host at a commit."""
    files: dict[RepoPath, str] = Field(default_factory=dict)
    """Files added to (or replacing files of) the snapshot, by path relative to the repo root."""
    edits: list[Annotated[Edit, AfterValidator(_edit_inside_repo)]] = Field(default_factory=list)
    """Applied last: how the bug is introduced into the snapshot (mutation tasks)."""
    test_command: str = "python3 -m pytest -q -p no:cacheprovider"
    """What the ``run_tests`` tool runs (the visible tests)."""
    max_turns: int = Field(default=30, ge=1)
    """Actions before the episode is truncated."""
    command_timeout: float = Field(default=60.0, gt=0, le=MAX_COMMAND_TIMEOUT)
    """Seconds one bash command may run (at most 10 minutes: a step holds a session's thread)."""
    grade_timeout: float = Field(default=300.0, gt=0, le=MAX_GRADE_TIMEOUT)
    """Seconds the hidden tests may run at submission (at most 30 minutes)."""
    paths: Annotated[dict[str, PathRole], AfterValidator(_absolute)] = Field(default_factory=dict)
    """Absolute paths the task's text names and what each stands for (Harbor's ``/app``: repo,
    ``/tests``: tests, ``/logs/verifier``: verifier, ``/solution``: solution). A sandbox can write
    only under its workdir, so these are rewritten to sandbox folders in the instruction, the
    files and the test and solution scripts."""

    @model_validator(mode="after")
    def _one_source(self) -> SweConfig:
        if self.repo and self.git:
            raise ValueError("give either repo (a bundled snapshot) or git (a checkout), not both")
        if not (self.repo or self.git or self.files):
            raise ValueError("the task has no files: give repo, git or files")
        return self


class Scripted(BaseModel):
    """A folder of files and the shell script in it to run: Harbor's ``tests/`` (whose
    ``test.sh`` writes a reward) or ``solution/`` (whose ``solve.sh`` applies the fix)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    files: dict[RepoPath, str] = Field(min_length=1)
    """The folder's files by path inside it."""
    script: RepoPath
    """The script to run, one of ``files``."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables the script runs with (Harbor's ``verifier.env``, ``solution.env``)."""

    @model_validator(mode="after")
    def _script_present(self) -> Scripted:
        if self.script not in self.files:
            raise ValueError(f"script {self.script!r} is not one of the folder's files")
        return self


class SweGold(BaseModel):
    """``Task.gold``: the hidden tests, which must pass, and the reference fix."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fail_to_pass: list[str] = Field(default_factory=list)
    """pytest node ids that fail on the buggy repo and must pass after the fix."""
    pass_to_pass: list[str] = Field(default_factory=list)
    """Node ids that pass before and must still pass after."""
    hidden_tests: dict[RepoPath, str] = Field(default_factory=dict)
    """Test files written over the agent's repo before grading (tests it may have edited)."""
    fix: list[Edit] = Field(default_factory=list)
    """The reference fix as edits on the buggy repo."""
    fix_patch: str | None = None
    """Or as a unified diff (``git apply``), as SWE-bench gives it."""
    test_script: Scripted | None = None
    """Or tests that grade by a script writing ``reward.txt``/``reward.json`` to the verifier
    folder (Harbor's ``tests/``), instead of pytest node ids; reward 1 is success."""
    fix_script: Scripted | None = None
    """Or the reference fix as a script run in the repository (Harbor's ``solution/``)."""

    @model_validator(mode="after")
    def _has_fix(self) -> SweGold:
        if not self.fail_to_pass and self.test_script is None:
            raise ValueError("gold needs tests: fail_to_pass (pytest ids) or test_script")
        if not (self.fix or self.fix_patch or self.fix_script):
            raise ValueError(
                "gold needs the reference fix: fix (edits), fix_patch (a diff) or fix_script"
            )
        return self


def apply_edit(text: str, edit: Edit) -> str:
    """``text`` with ``edit`` applied; ``ValueError`` unless ``old`` occurs exactly once."""
    if edit.old == "":
        return edit.new
    count = text.count(edit.old)
    if count != 1:
        raise ValueError(f"{edit.path}: the text to replace occurs {count} times (must be once)")
    return text.replace(edit.old, edit.new)
