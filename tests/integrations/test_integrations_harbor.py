"""Harbor task folders both ways, through the real harbor package (its Task loader, in a Python
3.12+ interpreter when this one is older): our SWE tasks exported, loaded by Harbor, imported
back and graded in the bubblewrap sandbox by the folder's own test.sh; and Harbor tasks written
for the test (tests/data/harbor) imported, graded, or refused with the reason."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentgym.envs.swe.env import SweEnv
from agentgym.envs.swe.harbor import UnsupportedTask, export_harbor, import_harbor
from agentgym.envs.swe.scripted import RewardMissing, map_paths
from agentgym.integrations.harbor import harbor_load, harbor_python
from agentgym.sandbox.local import bwrap_works
from agentgym.sandbox.testing import require_docker
from agentgym.task import Task, TaskSuite

ROOT = Path(__file__).resolve().parents[2]
WRITTEN = Path(__file__).parents[1] / "data" / "harbor"

pytestmark = pytest.mark.skipif(not bwrap_works(), reason="graded in the bubblewrap sandbox")


@pytest.fixture(scope="module")
def env():
    e = SweEnv(suite="swe/humanevalfix", sandbox="local")
    yield e
    e.close()


def submit_unsolved(env: SweEnv, task: Task) -> tuple[float, dict]:
    env.reset(options={"task": task})
    _, reward, terminated, _, info = env.step("submit")
    assert terminated
    return reward, info


def solve(env: SweEnv, task: Task) -> tuple[float, dict]:
    env.reset(options={"task": task})
    for _ in range(5):
        _, reward, terminated, truncated, info = env.step(env.expert_action())
        if terminated or truncated:
            return reward, info
    raise AssertionError(f"the expert did not finish {task.id}")


def test_exported_suites_load_in_harbor_and_round_trip_through_the_sandbox(env, tmp_path):
    originals = [
        *TaskSuite.load("swe/humanevalfix").tasks[:2],
        TaskSuite.load("swe/minirepo").tasks[0],
    ]
    version, dirs = export_harbor(originals, tmp_path)
    assert version.startswith(("0.25.", "0.26."))
    _, loaded = harbor_load([{"dir": d} for d in dirs])  # Harbor's own Task, read again
    for task, one in zip(originals, loaded, strict=True):
        assert one["valid"] and one["name"] == Path(one["dir"]).name
        assert one["instruction"].strip() == task.instruction.strip()
        assert one["config"]["metadata"]["agentgym_id"] == task.id
        assert (one["test_script"], one["solve_script"]) == ("test.sh", "solve.sh")
        assert one["verifier_mode"] == "shared"
    lint = [harbor_python(), "-m", "harbor.cli.main", "lint", "--json", *map(str, dirs)]
    linted = subprocess.run(lint, capture_output=True, text=True)
    assert linted.returncode in (0, 1), linted.stderr  # 1: it found something
    findings = json.loads(linted.stdout)
    # Harbor's linter would have the tests in a separate verifier container; ours share the
    # agent's (the import side runs only shared verifiers). Nothing else is flagged.
    assert {f["rule"] for f in findings} == {"shared-verifier"}, findings
    imported, skipped = import_harbor(tmp_path)
    assert skipped == {} and len(imported) == 3
    for task in imported:
        assert task.gold["test_script"]["script"] == "test.sh"
        assert submit_unsolved(env, task) == (
            0.0,
            {"valid": True, "success": False, "score": 0.0, "reward": 0.0},
        )
        reward, info = solve(env, task)
        assert reward == 1.0 and info["success"] and info["reward"] == 1.0


def test_harbor_tasks_written_for_the_test_import_and_grade_by_their_own_tests(env):
    tasks, skipped = import_harbor(WRITTEN)
    by_id = {t.id: t for t in tasks}
    assert sorted(by_id) == ["agentgym-tests/fix-median", "hello"]  # [task].name, else the folder
    assert "FROM node:20-slim" in skipped["node"]
    assert "ghcr.io/example/prebuilt:1.0" in skipped["prebuilt"]
    assert "'curl', which needs the network" in skipped["uvx"]
    hello, median = by_id["hello"], by_id["agentgym-tests/fix-median"]
    assert "canary" not in hello.instruction  # Harbor strips it
    assert hello.tags == ["harbor", "trivial", "file-operations"] and hello.difficulty == "easy"
    assert median.tags == ["harbor", "python", "bugfix"]
    assert median.config["files"]["stats.py"].startswith('"""Small statistics')
    assert median.gold["test_script"]["env"] == {"REPORT": "/logs/verifier/pytest.txt"}
    obs, _ = env.reset(options={"task": hello})
    assert "/work/repo/hello.txt" in obs and "/app" not in obs
    for task in (hello, median):
        reward, info = submit_unsolved(env, task)
        assert reward == 0.0 and not info["success"]
        reward, info = solve(env, task)
        assert reward == 1.0 and info["success"], info
    assert env.sandbox.read_file("/work/repo/stats.py").count("middle - 1") == 1


def test_harbor_tasks_grade_in_the_docker_sandbox_too():
    require_docker()  # the sandbox runs commands only: the image's agentgym code is not used
    tasks, _ = import_harbor(WRITTEN)
    docker = SweEnv(suite="swe/humanevalfix", sandbox="docker")
    try:
        for task in tasks:
            assert submit_unsolved(docker, task)[0] == 0.0
            assert solve(docker, task)[0] == 1.0
    finally:
        docker.close()


def test_a_planted_reward_does_not_count_and_a_missing_one_is_an_error(env, tmp_path):
    (hello,), _ = import_harbor(WRITTEN / "hello")
    env.reset(options={"task": hello})
    env.step(
        "```bash\nmkdir -p /work/grading/verifier && echo 1 > /work/grading/verifier/reward.txt\n```"
    )
    _, reward, _, _, info = env.step("submit")
    assert reward == 0.0 and info["reward"] == 0.0
    broken = tmp_path / "hello"
    shutil.copytree(WRITTEN / "hello", broken)
    (broken / "tests" / "test.sh").write_text("#!/bin/bash\necho 'forgot the reward'\n")
    (task,), _ = import_harbor(broken)
    env.reset(options={"task": task})
    with pytest.raises(RewardMissing, match="forgot the reward"):
        env.step("submit")


def test_harbor_refusals_reach_the_user(tmp_path):
    broken = tmp_path / "no-instruction"
    shutil.copytree(WRITTEN / "hello", broken)
    (broken / "instruction.md").unlink()
    with pytest.raises(ValueError, match="harbor refused it: FileNotFoundError"):
        import_harbor(broken)
    judged = tmp_path / "judged"
    shutil.copytree(WRITTEN / "median", judged)
    with (judged / "task.toml").open("a") as toml:
        toml.write("\n[verifier.env.more]\n")  # not a string: Harbor's TaskConfig refuses it
    with pytest.raises(ValueError, match="harbor refused it: ValidationError"):
        import_harbor(judged)
    (judged / "task.toml").write_text(
        (WRITTEN / "median" / "task.toml")
        .read_text()
        .replace('REPORT = "/logs/verifier/pytest.txt"', 'OPENAI_API_KEY = "${OPENAI_API_KEY}"')
    )
    with pytest.raises(UnsupportedTask, match=r"variables taken from the host \(OPENAI_API_KEY\)"):
        import_harbor(judged)


def test_cli_exports_and_imports(tmp_path):
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "agentgym.cli", "tasks", *args]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)

    out = tmp_path / "harbor"
    exported = cli("export-harbor", "swe/humanevalfix", "--out", str(out), "--limit", "2")
    assert exported.returncode == 0, exported.stderr
    assert "2 Harbor task folder(s)" in exported.stdout
    assert sorted(p.name for p in out.iterdir()) == ["humanevalfix-000", "humanevalfix-001"]
    suite = tmp_path / "imported.jsonl"
    imported = cli("import-harbor", str(out), "--out", str(suite))
    assert imported.returncode == 0, imported.stderr
    rows = [json.loads(line) for line in suite.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["humanevalfix-000", "humanevalfix-001"]
    refused = cli("import-harbor", str(WRITTEN / "node"), "--out", str(tmp_path / "x.jsonl"))
    assert refused.returncode == 2 and "FROM node:20-slim" in refused.stderr


def test_container_paths_are_rewritten_as_whole_path_components():
    paths = {"/app": "repo", "/logs/verifier": "verifier", "/tests": "tests"}
    folders = {"repo": "/work/repo", "verifier": "/work/v", "tests": "/work/t"}
    text = 'cd /app; cat "/app/x" /apple /tests/a.py > /logs/verifier/reward.txt /my/app'
    assert map_paths(text, paths, folders) == (  # type: ignore[arg-type]
        'cd /work/repo; cat "/work/repo/x" /apple /work/t/a.py > /work/v/reward.txt /my/app'
    )


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="harbor may be installed beside agentgym")
def test_without_a_harbor_interpreter_the_cli_says_how_to_get_one(tmp_path):
    command = [sys.executable, "-m", "agentgym.cli", "tasks", "import-harbor", str(WRITTEN)]
    env = {**os.environ, "AGENTGYM_HARBOR_PYTHON": str(tmp_path / "no-python")}
    result = subprocess.run(
        [*command, "--out", str(tmp_path / "x.jsonl")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "need harbor (Python 3.12+)" in result.stderr and "40-harbor.sh" in result.stderr
