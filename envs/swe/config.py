"""What a software-engineering task is: a repository snapshot, hidden tests, and a reference fix."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Edit(BaseModel):
    """Replace the one occurrence of ``old`` in ``path`` by ``new`` (``old == ""`` writes the file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(min_length=1)
    old: str
    new: str


class GitSource(BaseModel):
    """A repository on the host at a commit (SWE-bench instances imported from a local checkout)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    """Host path of a git checkout (``git archive`` reads it; it is never mounted)."""
    commit: str = Field(min_length=4)


class SweConfig(BaseModel):
    """``Task.config``: how to build the buggy repository and run the visible tests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo: str | None = None
    """A bundled snapshot under ``envs/swe/data/repos/<repo>/`` (``toolz``), or None."""
    git: GitSource | None = None
    """Or a git checkout on the host at a commit."""
    files: dict[str, str] = Field(default_factory=dict)
    """Files added to (or replacing files of) the snapshot, by path relative to the repo root."""
    edits: list[Edit] = Field(default_factory=list)
    """Applied last: how the bug is introduced into the snapshot (mutation tasks)."""
    test_command: str = "python3 -m pytest -q -p no:cacheprovider"
    """What the ``run_tests`` tool runs (the visible tests)."""
    max_turns: int = Field(default=30, ge=1)
    """Actions before the episode is truncated."""
    command_timeout: float = Field(default=60.0, gt=0)
    """Seconds one bash command may run."""
    grade_timeout: float = Field(default=300.0, gt=0)
    """Seconds the hidden tests may run at submission."""

    @model_validator(mode="after")
    def _one_source(self) -> SweConfig:
        if self.repo and self.git:
            raise ValueError("give either repo (a bundled snapshot) or git (a checkout), not both")
        if not (self.repo or self.git or self.files):
            raise ValueError("the task has no files: give repo, git or files")
        return self


class SweGold(BaseModel):
    """``Task.gold``: the hidden tests, which must pass, and the reference fix."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fail_to_pass: list[str] = Field(min_length=1)
    """pytest node ids that fail on the buggy repo and must pass after the fix."""
    pass_to_pass: list[str] = Field(default_factory=list)
    """Node ids that pass before and must still pass after."""
    hidden_tests: dict[str, str] = Field(default_factory=dict)
    """Test files written over the agent's repo before grading (tests it may have edited)."""
    fix: list[Edit] = Field(default_factory=list)
    """The reference fix as edits on the buggy repo."""
    fix_patch: str | None = None
    """Or as a unified diff (``git apply``), as SWE-bench gives it."""

    @model_validator(mode="after")
    def _has_fix(self) -> SweGold:
        if not self.fix and not self.fix_patch:
            raise ValueError("gold needs the reference fix: fix (edits) or fix_patch (a diff)")
        return self


def apply_edit(text: str, edit: Edit) -> str:
    """``text`` with ``edit`` applied; ``ValueError`` unless ``old`` occurs exactly once."""
    if edit.old == "":
        return edit.new
    count = text.count(edit.old)
    if count != 1:
        raise ValueError(f"{edit.path}: the text to replace occurs {count} times (must be once)")
    return text.replace(edit.old, edit.new)
