"""SweEnv: fix a bug in a repository inside a sandbox; hidden tests grade the submission."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel

from agentgym.env import ResetNeeded, Snapshot, StepResult, TextEnv
from agentgym.envs.swe.actions import TOOLS, Invalid, parse
from agentgym.envs.swe.config import Edit, Scripted, SweConfig, SweGold, apply_edit
from agentgym.envs.swe.grading import grade, normalise
from agentgym.envs.swe.repo import build_files, install
from agentgym.envs.swe.scripted import (
    grade_script,
    map_files,
    map_paths,
    sandbox_folders,
    solve_command,
)
from agentgym.sandbox import Sandbox, SandboxConfig, SandboxPool, get_provider
from agentgym.sandbox.base import SandboxError
from agentgym.sandbox.providers import provider_names
from agentgym.task import Task, TaskSuite

MAX_OBSERVATION = 10_000
MAX_COMMAND = 100_000
"""Longest bash command, in characters (Linux refuses one argument over 128 KiB)."""
"""Characters of command output shown; longer output keeps its head and tail (as mini-swe-agent)."""
SYSTEM_PROMPT = """\
You are fixing a bug in a Python repository. Each turn, send ONE action:
- a bash command in exactly one fenced block:
```bash
grep -n "def " solution.py
```
  (it runs in the repository root; `cd` does not persist between commands), or
- a JSON tool call: {"name": "view", "arguments": {"path": "...", "start": 1, "end": 40}},
  {"name": "edit", "arguments": {"path": "...", "old": "<exact text>", "new": "<replacement>"}},
  {"name": "run_tests", "arguments": {}}, {"name": "submit", "arguments": {}}.
When the fix is done, send `submit`. Hidden tests then decide: reward 1 if they all pass."""


@dataclass
class SweState:
    """All mutable episode state (the repository itself lives in the sandbox)."""

    turns: int = 0
    actions: list[str] = field(default_factory=list)
    """Every action so far: snapshots restore by replaying them into a fresh sandbox."""
    files: dict[str, str] = field(default_factory=dict)
    """The buggy repository as built for this episode (grading restores its test config)."""
    repo: str = ""
    """Path of the repository in the sandbox."""


_pools: dict[tuple[str, str], SandboxPool] = {}
_pools_lock = threading.Lock()


def shared_pool(provider: str, config: SandboxConfig) -> SandboxPool:
    """One warm pool per provider and config for the whole process; it grows with demand."""
    key = (provider, config.model_dump_json())
    with _pools_lock:
        if key not in _pools:
            _pools[key] = SandboxPool(get_provider(provider, config), size=1, grow=True)
        return _pools[key]


def auto_provider() -> str:
    """docker when the engine and the sandbox image are there, else bubblewrap."""
    try:
        from agentgym.sandbox.docker_provider import docker_client
        from agentgym.sandbox.image import has_image

        client = docker_client(timeout=10)
        try:
            if has_image(client):
                return "docker"
        finally:
            client.close()
    except Exception:  # no SDK, no engine: the local provider is the fallback
        pass
    return "local"


class SweEnv(TextEnv):
    """Swe: fix a bug in a Python repository inside a sandbox; hidden tests grade the submission.

    The agent gets a repository (a snapshot of files, a fresh git repo at ``/work/repo``) and a
    problem statement. It works one action per turn, mini-swe-agent style (a bash command; ``cd``
    does not persist) or with structured tools, and submits. Grading follows SWE-bench: the hidden
    test files are written over the agent's repository, then the FAIL_TO_PASS and PASS_TO_PASS tests
    run with pytest.

    =====================  =========================================================================
    Id                     ``agentgym/Swe-v0`` (``agentgym.make("Swe-v0", sandbox="docker")``)
    Class                  :class:`agentgym.envs.swe.env.SweEnv`
    Actions                exactly one ```` ```bash ... ``` ```` block; or a JSON tool call
                           ``{"name": "view"|"edit"|"run_tests"|"bash"|"submit", "arguments": ...}``
                           (schemas in ``info["tools"]``); or ``submit``. ``edit`` replaces the one
                           occurrence of ``old`` by ``new`` (``old=""`` writes the file)
    Observations           text: first the problem statement and the file list; then
                           ``<returncode>N</returncode><output>...</output>`` (10,000 characters at
                           most: head and tail), the file view, or what was wrong with the action.
                           pytest run times are removed so observations are deterministic
    Reward                 after ``submit``: 1.0 if every FAIL_TO_PASS and PASS_TO_PASS test passes,
                           else 0.0; ``info["score"]`` = share of those tests passing. A task
                           with ``gold.test_script`` (imported from Harbor) is graded by its own
                           script instead: reward 1.0 when it writes a reward of 1 or more,
                           ``info["score"]`` = that reward
    Episode end            ``submit`` terminates; ``max_turns`` actions (valid or not) truncate with
                           success False, score 0
    Turn limit             per task: 20 (HumanEvalFix), 40 (mini-repo)
    Suites                 ``swe/humanevalfix`` 164 tasks (tags ``humanevalfix`` + bug type);
                           ``swe/minirepo`` 120 tasks (tags ``minirepo``, ``toolz.<module>``,
                           mutation operator)
    Expert                 ``expert_action()``: the reference fix as ``edit`` calls (or one
                           ``git apply`` of a diff), then ``submit``; solves every task
    Sandbox                ``sandbox="auto"`` (docker when the engine and a current image are there,
                           else bubblewrap), ``"docker"``, ``"local"``; one warm pool per process
    Data                   HumanEvalFix: bigcode-project/octopack HumanEvalPack (MIT); mini-repo:
                           toolz 1.2.0 (BSD-3), bundled in ``envs/swe/data/repos/toolz``
    Regenerate             ``python -m agentgym.envs.swe.generate --data ../shared/data``
    Import your own        :func:`agentgym.envs.swe.importers.from_swebench` (SWE-bench instances +
                           a local checkout), :func:`agentgym.envs.swe.importers.from_directory`
                           (one folder per program: buggy file, fixed file, tests),
                           ``agentgym tasks import-harbor`` (Harbor task directories)
    =====================  =========================================================================

    HumanEvalFix tasks: ``solution.py`` (prompt + buggy body), visible ``test_example.py``, hidden
    ``tests/test_hidden.py`` with one test per assertion of the original ``check`` (10 s alarm each:
    three bugs loop forever). Mini-repo tasks (SWE-smith style): one function of toolz mutated (a
    comparison, operator, constant, argument order, return value or dropped statement), kept only
    when tests of its module fail; the statement names the failing tests and the first failure.

    Config (``Task.config``, :class:`SweConfig`): ``repo`` (bundled snapshot) or ``git`` (host
    checkout + commit) or ``files``; ``edits`` (how the bug is introduced); ``test_command``;
    ``max_turns``; ``command_timeout``; ``grade_timeout``. Gold (:class:`SweGold`): ``fail_to_pass``,
    ``pass_to_pass``, ``hidden_tests`` (files), ``fix`` (edits) or ``fix_patch`` (a diff).
    """

    config_model: ClassVar[type[BaseModel]] = SweConfig
    system_prompt: ClassVar[str] = SYSTEM_PROMPT
    default_suite: ClassVar[str | None] = "swe/humanevalfix"
    own_sandbox: ClassVar[bool] = True

    def __init__(
        self,
        suite: str | TaskSuite | None = None,
        render_mode: str | None = None,
        sandbox: str = "auto",
        sandbox_config: SandboxConfig | None = None,
    ) -> None:
        super().__init__(suite, render_mode)
        if sandbox != "auto" and sandbox not in provider_names():
            raise ValueError(
                f"unknown sandbox {sandbox!r}; use auto or one of {', '.join(provider_names())}"
            )
        self.provider = auto_provider() if sandbox == "auto" else sandbox
        self.sandbox_config = sandbox_config or SandboxConfig()
        self.sandbox: Sandbox | None = None

    @classmethod
    def validate_task(cls, task: Task) -> BaseModel:
        SweGold.model_validate(task.gold)
        return cls.config_model.model_validate(task.config)

    # ------------------------------------------------------------------ episode
    def _reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._release()
        self.sandbox = shared_pool(self.provider, self.sandbox_config).acquire()
        repo = f"{self.sandbox.workdir}/repo"
        folders = sandbox_folders(self.sandbox.workdir, repo)
        files = map_files(build_files(self.config), self.config.paths, folders)
        self.state = SweState(files=files, repo=install(self.sandbox, files))
        listing = "\n".join(sorted(files)[:200])
        more = f"\n... and {len(files) - 200} more files" if len(files) > 200 else ""
        instruction = map_paths(task.instruction, self.config.paths, folders)
        obs = (
            f"{instruction}\n\nThe repository is at {self.state.repo} ({len(files)} files):\n"
            f"{listing}{more}\n\nYou have {self.config.max_turns} actions; send `submit` when done."
        )
        return obs, {"tools": TOOLS}

    def _step(self, action: str) -> StepResult:
        self.state.turns += 1
        self.state.actions.append(action)
        parsed = parse(action)
        if isinstance(parsed, Invalid):
            return self._after(parsed.reason, valid=False)
        if problem := argument_problem(parsed.arguments):
            return self._after(f"Bad arguments for {parsed.name}: {problem}", valid=False)
        try:
            if parsed.name == "submit":
                return self._submit()
            obs = getattr(self, f"_tool_{parsed.name}")(**parsed.arguments)
        except (TypeError, ValueError, OverflowError) as e:  # unexpected arguments or values
            return self._after(f"Bad arguments for {parsed.name}: {e}", valid=False)
        except SandboxError as e:  # e.g. `kill -9 -1` took the sandbox's server with it
            self._release()
            obs = f"Error: the sandbox stopped ({e}); the episode ends."
            info = {"valid": False, "success": False, "score": 0.0, "turns_left": 0}
            return obs, 0.0, False, True, info
        return self._after(obs, valid=True)

    def _step_invalid(self, message: str) -> StepResult:
        self.state.turns += 1
        self.state.actions.append(message)  # replays as an invalid action too
        return self._after(message, valid=False)

    def _after(self, obs: str, valid: bool) -> StepResult:
        info: dict[str, Any] = {
            "valid": valid,
            "turns_left": self.config.max_turns - self.state.turns,
        }
        if self.state.turns >= self.config.max_turns:
            info |= {"success": False, "score": 0.0}
            obs += f"\n\nTurn limit ({self.config.max_turns}) reached without a submission."
            return obs, 0.0, False, True, info
        return obs, 0.0, False, False, info

    def _submit(self) -> StepResult:
        gold = SweGold.model_validate(self.task.gold)  # type: ignore[union-attr]
        if gold.test_script is not None:
            return self._submit_scripted(gold.test_script)
        g = grade(self._box(), self.state.repo, self.config, gold, self.state.files)
        shown = ", ".join(g.failed[:10]) + (" ..." if len(g.failed) > 10 else "")
        verdict = "All hidden tests pass." if g.success else f"Failing hidden tests: {shown}"
        obs = f"Submitted. {len(g.passed)}/{len(g.passed) + len(g.failed)} hidden tests pass. {verdict}"
        info = {
            "valid": True,
            "success": g.success,
            "score": g.score,
            "passed": len(g.passed),
            "failed": len(g.failed),
        }
        return obs, float(g.success), True, False, info

    def _submit_scripted(self, tests: Scripted) -> StepResult:
        g = grade_script(self._box(), self.state.repo, self.config, tests)
        verdict = "The task's tests pass." if g.success else "The task's tests do not pass."
        obs = f"Submitted. Reward {g.reward:g} from the task's tests. {verdict}"
        info = {"valid": True, "success": g.success, "score": g.score, "reward": g.reward}
        return obs, float(g.success), True, False, info

    # ------------------------------------------------------------------ tools
    def _tool_bash(self, command: str) -> str:
        if len(command) > MAX_COMMAND:
            raise ValueError(
                f"the command has {len(command):,} characters, at most {MAX_COMMAND:,}; "
                "write long content to a file with edit"
            )
        try:
            r = self._box().exec(command, cwd=self.state.repo, timeout=self.config.command_timeout)
        except TimeoutError:
            return f"The command timed out after {self.config.command_timeout:.0f}s and was killed."
        except OSError as e:
            return f"Error: {e}"
        return f"<returncode>{r.returncode}</returncode>\n<output>\n{cap(r.stdout + r.stderr)}</output>"

    def _tool_view(self, path: str, start: int = 1, end: int | None = None) -> str:
        text = self._read(path)
        if text is None:
            return f"Error: {path} does not exist or is not a text file."
        lines = text.splitlines()
        first, last = max(1, line_number(start)), min(len(lines), line_number(end or len(lines)))
        body = "\n".join(f"{i:6d}\t{lines[i - 1]}" for i in range(first, last + 1))
        return cap(body) if body else f"{path}: no lines in {first}..{last} ({len(lines)} lines)"

    def _tool_edit(self, path: str, old: str, new: str) -> str:
        current = self._read(path)
        if current is None and old:
            return f"Error: {path} does not exist; use old='' to create it."
        try:
            updated = apply_edit(current or "", Edit(path=path, old=old, new=new))
        except ValueError as e:
            return f"Error: {e}. Nothing was changed."
        try:
            self._box().write_file(f"{self.state.repo}/{path}", updated)
        except OSError as e:  # a directory, a file over the free space...
            return f"Error: {e}. Nothing was changed."
        return f"Edited {path}." if old else f"Wrote {path} ({len(new)} characters)."

    def _tool_run_tests(self, paths: list[str] | None = None) -> str:
        extra = " ".join(json.dumps(p) for p in paths or [])
        return self._tool_bash(f"{self.config.test_command} {extra}".strip())

    def _read(self, path: str) -> str | None:
        try:
            return self._box().read_file(f"{self.state.repo}/{path}")
        except (OSError, UnicodeDecodeError):  # missing, a directory, /proc/self/mem (EIO)...
            return None

    def _box(self) -> Sandbox:
        if self.sandbox is None:
            raise ResetNeeded("call reset() first")
        return self.sandbox

    # ------------------------------------------------------------------ expert
    def expert_action(self) -> str:
        """Apply the reference fix one edit at a time (or as one ``git apply``), then submit."""
        if self.task is None:
            raise ResetNeeded("call reset() before expert_action()")
        gold = SweGold.model_validate(self.task.gold)
        for edit in gold.fix:
            current = self._read(edit.path)
            if (
                edit.old == ""
                and current != edit.new
                or edit.old
                and current
                and edit.old in current
            ):
                return json.dumps({"name": "edit", "arguments": edit.model_dump()})
        if gold.fix_patch and not self._patch_applied(gold.fix_patch):
            return f"```bash\ngit apply - <<'AGENTGYM_PATCH'\n{gold.fix_patch}\nAGENTGYM_PATCH\n```"
        if gold.fix_script is not None:
            box = self._box()
            command = solve_command(gold.fix_script, self.config, box.workdir, self.state.repo)
            action = f"```bash\n{command}\n```"
            if action not in self.state.actions:  # a script has no "already applied" check
                return action
        return "submit"

    def _patch_applied(self, patch: str) -> bool:
        r = self._box().exec(
            ["git", "apply", "--check", "-R", "-"], input=patch, cwd=self.state.repo
        )
        return r.returncode == 0

    # ------------------------------------------------------------------ branching, lifecycle
    def snapshot(self) -> Snapshot:
        """The task and the actions so far; :meth:`restore` replays them in a fresh sandbox."""
        if self.task is None:
            raise ResetNeeded("call reset() before snapshot()")
        return Snapshot(type(self), self.task, self.config, list(self.state.actions), {}, self.done)

    def restore(self, snapshot: Snapshot) -> None:
        """Replay: a sandbox's files cannot be deep-copied, so the episode is played again."""
        self._check_snapshot(snapshot)
        self.reset(options={"task": snapshot.task})
        for action in snapshot.state:
            self.step(action)

    def _release(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None

    def close(self) -> None:
        self._release()
        super().close()


def line_number(value: Any) -> int:
    """A line number from a tool argument: an integer (or integral float/str); ``ValueError``
    otherwise (``"abc"``, ``1e999``, ``NaN``, ``true``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"a line number is an integer, got {value!r}")
    try:
        number = float(value) if not isinstance(value, int) else value
        if number != int(number):
            raise ValueError
        return int(number)
    except (ValueError, OverflowError):
        raise ValueError(f"a line number is an integer, got {str(value)[:40]!r}") from None


def argument_problem(arguments: dict[str, Any]) -> str | None:
    """What makes tool arguments unusable in a sandbox: a NUL byte or text that is not UTF-8
    (a lone surrogate) in any string; None when they are fine."""
    stack: list[Any] = [arguments]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str):
            if "\x00" in value:
                return "text arguments cannot contain NUL bytes"
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return "text arguments must be valid UTF-8 (no lone surrogates)"
    return None


def cap(text: str, limit: int = MAX_OBSERVATION) -> str:
    """Text up to ``limit`` characters; longer text keeps head and tail with a note between."""
    text = normalise(text)
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... {len(text) - limit} characters elided ...\n{text[-half:]}"
