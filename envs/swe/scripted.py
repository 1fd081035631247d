"""Tasks graded by their own test script (Harbor's ``tests/test.sh``), not by pytest node ids.

Such a task names container paths (``/app``, ``/tests``, ``/logs/verifier``, ``/solution``) that
a sandbox cannot create: its root is read-only and only the workdir is writable. Each path is
mapped onto a folder of the sandbox (:func:`sandbox_folders`) and rewritten wherever the task's
text names it, as a whole path component (``/app/x`` and ``"/app"``, never ``/apple``).

Grading writes the tests folder afresh, removes any reward file the agent left, runs the script
in the repository and reads ``reward.json`` (its ``reward`` entry, or its only entry) or else
``reward.txt``, as Harbor's verifier does. A script that writes no readable reward is an error
(Harbor's ``RewardFileNotFoundError``), raised so the episode is recorded as errored, never as
reward 0. Not prevented, as in any in-place grading: a process the agent left running.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass

from agentgym.envs.swe.config import PathRole, Scripted, SweConfig
from agentgym.sandbox import Sandbox


@dataclass(frozen=True)
class ScriptGrade:
    """What the test script said."""

    reward: float
    output: str

    @property
    def success(self) -> bool:
        return self.reward >= 1.0

    @property
    def score(self) -> float:
        return self.reward


class RewardMissing(RuntimeError):
    """The test script wrote no readable reward file."""


def sandbox_folders(workdir: str, repo: str) -> dict[PathRole, str]:
    """The sandbox folder each container path role maps to."""
    return {
        "repo": repo,
        "tests": f"{workdir}/grading/tests",
        "verifier": f"{workdir}/grading/verifier",
        "solution": f"{workdir}/solution",
    }


def map_paths(text: str, paths: dict[str, PathRole], folders: dict[PathRole, str]) -> str:
    """``text`` with every container path of ``paths`` replaced by its sandbox folder (longest
    first, so ``/logs/verifier`` wins over a ``/logs`` entry)."""
    if not paths:
        return text
    ordered = sorted(paths, key=len, reverse=True)
    pattern = re.compile(
        "|".join(rf"(?<![\w./-]){re.escape(p.rstrip('/'))}(?![\w.-])" for p in ordered)
    )
    by_path = {p.rstrip("/"): folders[paths[p]] for p in ordered}
    return pattern.sub(lambda m: by_path[m.group(0)], text)


def map_files(
    files: dict[str, str], paths: dict[str, PathRole], folders: dict[PathRole, str]
) -> dict[str, str]:
    """Every file's text with :func:`map_paths` applied."""
    return {p: map_paths(t, paths, folders) for p, t in files.items()}


def _write_folder(sandbox: Sandbox, folder: str, files: dict[str, str]) -> None:
    sandbox.exec(["rm", "-rf", folder])
    sandbox.exec(["mkdir", "-p", folder])
    for path, text in files.items():
        sandbox.write_file(f"{folder}/{path}", text)


def grade_script(sandbox: Sandbox, repo: str, config: SweConfig, tests: Scripted) -> ScriptGrade:
    """Run the task's test script in ``repo`` and read the reward it wrote."""
    folders = sandbox_folders(sandbox.workdir, repo)
    _write_folder(sandbox, folders["tests"], map_files(tests.files, config.paths, folders))
    _write_folder(sandbox, folders["verifier"], {})
    script = f"{folders['tests']}/{tests.script}"
    try:
        env = {k: map_paths(v, config.paths, folders) for k, v in tests.env.items()}
        r = sandbox.exec(["bash", script], cwd=repo, env=env, timeout=config.grade_timeout)
        output = r.stdout + r.stderr
    except TimeoutError:
        output = f"The tests did not finish within {config.grade_timeout:.0f}s."
    return ScriptGrade(read_reward(sandbox, folders["verifier"], output), output)


def read_reward(sandbox: Sandbox, verifier: str, output: str = "") -> float:
    """The reward in ``reward.json`` (preferred) or ``reward.txt``; :class:`RewardMissing`
    when neither holds a finite number."""
    for name in ("reward.json", "reward.txt"):
        try:
            text = sandbox.read_file(f"{verifier}/{name}")
        except (OSError, UnicodeDecodeError):
            continue
        try:
            value = _json_reward(text) if name == "reward.json" else float(text.strip())
        except (ValueError, KeyError) as e:
            raise RewardMissing(f"{name} holds no reward ({e}): {text[:200]!r}") from None
        if not math.isfinite(value):
            raise RewardMissing(f"{name} holds a non-finite reward: {text[:200]!r}")
        return value
    raise RewardMissing(
        f"the test script wrote neither reward.json nor reward.txt; its output ended: "
        f"{output[-1000:]}"
    )


def _json_reward(text: str) -> float:
    data = json.loads(text)
    if isinstance(data, dict):
        if "reward" in data:
            return float(data["reward"])
        if len(data) == 1:
            return float(next(iter(data.values())))
        raise KeyError(f"several rewards and none named 'reward': {sorted(data)}")
    return float(data)


def solve_command(fix: Scripted, config: SweConfig, workdir: str, repo: str) -> str:
    """One bash command that writes the solution folder and runs its script in the repository."""
    folders = sandbox_folders(workdir, repo)
    folder = folders["solution"]
    lines = [f"rm -rf {folder} && mkdir -p {folder}"]
    for path, text in sorted(map_files(fix.files, config.paths, folders).items()):
        target = shlex.quote(f"{folder}/{path}")
        body, end = text.removesuffix("\n"), _delimiter(text)
        lines.append(f"mkdir -p \"$(dirname {target})\" && cat > {target} <<'{end}'\n{body}\n{end}")
    env = [f"{k}={shlex.quote(map_paths(v, config.paths, folders))}" for k, v in fix.env.items()]
    lines.append(" ".join(["env", *env, "bash", shlex.quote(f"{folder}/{fix.script}")]))
    return "\n".join(lines)


def _delimiter(text: str) -> str:
    n = 0
    while f"AGENTGYM_EOF_{n}" in text:
        n += 1
    return f"AGENTGYM_EOF_{n}"
