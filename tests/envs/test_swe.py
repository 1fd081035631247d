"""agentgym/Swe-v0: suites, HumanEvalFix fidelity, expert, grading, tools, robustness, importers."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from support import shared_data

from agentgym.envs.swe.config import GIT_ROOTS_VARIABLE, SweConfig, SweGold, apply_edit
from agentgym.envs.swe.env import SweEnv, shared_pool
from agentgym.envs.swe.importers import from_directory, from_swebench
from agentgym.envs.swe.verify import run_tests_bulk
from agentgym.sandbox import SandboxConfig, open_sandbox
from agentgym.sandbox.local import bwrap_works
from agentgym.sandbox.testing import require_docker
from agentgym.task import Task, TaskSuite, check_suite

TASKS = Path(__file__).resolve().parents[2] / "tasks" / "swe"
SHARED = shared_data()

pytestmark = pytest.mark.skipif(
    not bwrap_works(), reason="the swe tests use the bubblewrap sandbox"
)


@pytest.fixture(scope="module")
def hef() -> TaskSuite:
    return TaskSuite.load(TASKS / "humanevalfix.jsonl")


@pytest.fixture(scope="module")
def mini() -> TaskSuite:
    return TaskSuite.load(TASKS / "minirepo.jsonl")


@pytest.fixture(scope="module")
def env():
    e = SweEnv(suite=str(TASKS / "humanevalfix.jsonl"), sandbox="local")
    yield e
    e.close()


def play(env: SweEnv, task: Task | str, actions: list[str]) -> list[tuple]:
    env.reset(seed=0, options={"task": task})
    out = []
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        out.append((obs, reward, terminated, truncated, info))
        if terminated or truncated:
            break
    return out


def solve(env: SweEnv, task: Task) -> dict:
    env.reset(seed=0, options={"task": task})
    for _ in range(10):
        _, reward, terminated, truncated, info = env.step(env.expert_action())
        if terminated or truncated:
            return info | {"reward": reward}
    raise AssertionError(f"expert did not finish {task.id}")


# ---------------------------------------------------------------------- suites
def test_suites_are_valid_and_complete(hef, mini):
    assert len(hef) == 164 and len(mini) >= 100
    assert check_suite(TASKS / "humanevalfix.jsonl") == []
    assert check_suite(TASKS / "minirepo.jsonl") == []
    manifest = json.loads((TASKS / "manifest.json").read_text())
    assert manifest["suites"]["humanevalfix"]["tasks"] == 164
    assert (TASKS / "LICENSE-humanevalfix").is_file() and (TASKS / "LICENSE-toolz").is_file()
    modules = {t for task in mini for t in task.tags if t.startswith("toolz.")}
    assert {"toolz.itertoolz", "toolz.functoolz", "toolz.dicttoolz"} <= modules


def test_every_humanevalfix_bug_fails_and_every_fix_passes(hef):
    """The data set's own guarantee, checked on our repos: buggy fails hidden tests, fix passes."""
    jobs = []
    for task in hef:
        config, gold = SweConfig.model_validate(task.config), SweGold.model_validate(task.gold)
        buggy = {**config.files, **gold.hidden_tests}
        fixed = dict(buggy)
        for edit in gold.fix:
            fixed[edit.path] = apply_edit(fixed[edit.path], edit)
        for kind, files in (("buggy", buggy), ("fixed", fixed)):
            jobs.append(
                {
                    "id": f"{task.id}|{kind}",
                    "files": files,
                    "test": "tests/test_hidden.py",
                    "purge": ["solution"],
                }
            )
    with open_sandbox("local") as sb:
        results = run_tests_bulk(sb, jobs, limit_s=3)
    for task in hef:
        buggy, fixed = results[f"{task.id}|buggy"], results[f"{task.id}|fixed"]
        assert not all(buggy.values()), f"{task.id}: the buggy version passes every hidden test"
        assert fixed and all(fixed.values()), f"{task.id}: the fix fails {fixed}"
        gold = SweGold.model_validate(task.gold)
        assert set(gold.fail_to_pass) | set(gold.pass_to_pass) == set(fixed), task.id


def test_humanevalfix_repo_matches_the_original_row(hef):
    lines = (SHARED / "humanevalfix" / "humanevalpack_python.jsonl").read_text().splitlines()
    rows = {json.loads(line)["task_id"]: json.loads(line) for line in lines}
    task = hef["humanevalfix-000"]
    row = rows["Python/0"]
    assert task.config["files"]["solution.py"] == row["prompt"] + row["buggy_solution"]
    assert task.gold["fix"][0]["new"] == row["canonical_solution"]
    assert task.instruction.startswith("Fix bugs in has_close_elements.")


# ---------------------------------------------------------------------- expert and grading
@pytest.mark.slow
@pytest.mark.parametrize("suite_name", ["humanevalfix", "minirepo"])
def test_expert_solves_and_inaction_fails(env, suite_name):
    suite = TaskSuite.load(TASKS / f"{suite_name}.jsonl")
    for task in suite.tasks[:: max(1, len(suite) // 3)][:3]:
        assert solve(env, task)["success"], task.id
        (*_, last) = play(env, task, ["submit"])
        assert last[2] and last[1] == 0.0 and not last[4]["success"], task.id
        assert last[4]["score"] < 1.0


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("suite_name", ["humanevalfix", "minirepo"])
def test_expert_solves_every_task(env, suite_name, request):
    """Minutes long: runs only when asked for (``pytest -m slow``); the sample above always runs."""
    if "slow" not in (request.config.option.markexpr or ""):
        pytest.skip("the full expert run takes minutes: select it with -m slow")
    for task in TaskSuite.load(TASKS / f"{suite_name}.jsonl"):
        assert solve(env, task)["success"], task.id


def test_editing_or_deleting_tests_does_not_fake_a_pass(env, mini):
    task = mini.tasks[0]
    test_file = SweGold.model_validate(task.gold).fail_to_pass[0].split("::")[0]
    cheats = [
        "```bash\nrm -rf toolz/tests && mkdir toolz/tests\n```",
        '```bash\nprintf "import pytest\\ncollect_ignore_glob = [\\"*\\"]\\n" > conftest.py\n```',
        f"```bash\nsed -i 's/assert /assert True or /' {test_file}\n```",
        "submit",
    ]
    *_, last = play(env, task, cheats)
    assert last[2] and not last[4]["success"] and last[1] == 0.0


def test_score_is_the_share_of_hidden_tests_passing(env, hef):
    task = next(t for t in hef if len(SweGold.model_validate(t.gold).pass_to_pass) >= 2)
    gold = SweGold.model_validate(task.gold)
    *_, last = play(env, task, ["submit"])
    total = len(gold.fail_to_pass) + len(gold.pass_to_pass)
    assert last[4]["score"] == pytest.approx(len(gold.pass_to_pass) / total)


# ---------------------------------------------------------------------- actions and tools
def test_bash_tool_mini_swe_agent_style(env):
    ((obs, _, _, _, info),) = play(
        env, "humanevalfix-000", ["Let me look.\n```bash\ncd /tmp && pwd; exit 3\n```"]
    )
    assert obs.startswith("<returncode>3</returncode>") and "/tmp" in obs and info["valid"]
    ((obs, *_),) = play(env, "humanevalfix-000", ["```bash\npwd\n```"])
    assert "/work/repo" in obs  # cd did not persist


def test_structured_tools(env):
    view = json.dumps({"name": "view", "arguments": {"path": "solution.py", "start": 4, "end": 5}})
    bad_edit = json.dumps(
        {"name": "edit", "arguments": {"path": "solution.py", "old": "zzz", "new": "y"}}
    )
    new_file = json.dumps(
        {"name": "edit", "arguments": {"path": "notes/x.txt", "old": "", "new": "hi"}}
    )
    run = json.dumps({"type": "function", "function": {"name": "run_tests", "arguments": "{}"}})
    steps = play(
        env, "humanevalfix-000", [view, bad_edit, new_file, "```bash\ncat notes/x.txt\n```", run]
    )
    assert steps[0][0].splitlines()[0].startswith("     4\tdef has_close_elements")
    assert "occurs 0 times" in steps[1][0] and "Nothing was changed" in steps[1][0]
    assert steps[2][0] == "Wrote notes/x.txt (2 characters)." and "hi" in steps[3][0]
    assert "1 failed" in steps[4][0] and not re.search(r" in \d", steps[4][0])  # no run times


@pytest.mark.parametrize(
    "action, reason",
    [
        ("", "empty"),
        ("ls -la", "found no bash block"),
        ("```bash\nls\n```\n```bash\npwd\n```", "found 2 bash blocks"),
        ('{"name": "rm_rf", "arguments": {}}', "Unknown tool"),
        ('{"name": "edit", "arguments": {"path": "a"}}', "needs the argument(s) old, new"),
        ("{not json", "not valid JSON"),
    ],
)
def test_malformed_actions_explain_and_count_a_turn(env, action, reason):
    ((obs, reward, terminated, truncated, info),) = play(env, "humanevalfix-000", [action])
    assert reason in obs and info["valid"] is False and not terminated
    assert info["turns_left"] == 19


def test_turn_limit_truncates_without_success(env, hef):
    task = hef["humanevalfix-000"]
    steps = play(env, task, ["```bash\ntrue\n```"] * 25)
    assert len(steps) == 20 and steps[-1][3] and not steps[-1][4]["success"]


def test_command_timeout_is_an_observation(env, hef):
    task = hef["humanevalfix-000"].model_copy(
        update={"config": {**hef["humanevalfix-000"].config, "command_timeout": 1}}
    )
    ((obs, *_),) = play(env, task, ["```bash\nsleep 30\n```"])
    assert "timed out after 1s" in obs


def test_bad_task_config_is_rejected_with_the_field():
    task = Task(
        id="x",
        env="agentgym/Swe-v0",
        instruction="-",
        config={"repo": "nope"},
        gold={"fail_to_pass": ["a::b"], "fix": [{"path": "a", "old": "", "new": ""}]},
    )
    with pytest.raises(ValueError, match="no bundled repository 'nope'"):
        SweEnv(sandbox="local").reset(options={"task": task})
    with pytest.raises(ValueError, match="fail_to_pass"):
        SweEnv.validate_task(task.model_copy(update={"gold": {}}))


# ---------------------------------------------------------------------- docker
def test_expert_solves_in_docker(hef):
    require_docker()
    env = SweEnv(suite=str(TASKS / "humanevalfix.jsonl"), sandbox="docker")
    try:
        assert solve(env, hef["humanevalfix-010"])["success"]
    finally:
        env.close()


# ---------------------------------------------------------------------- importers
def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def test_swebench_importer_on_a_local_checkout(tmp_path, env, monkeypatch):
    monkeypatch.setenv(GIT_ROOTS_VARIABLE, str(tmp_path))  # the host allows its checkouts here
    repo = tmp_path / "calc"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text(
        "from calc import add\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
    )
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    patch = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    test_patch = (
        "--- a/test_calc.py\n+++ b/test_calc.py\n@@ -3,2 +3,5 @@\n def test_zero():\n"
        "     assert add(0, 0) == 0\n+\n+def test_add():\n+    assert add(2, 3) == 5\n"
    )
    row = {
        "instance_id": "calc__calc-1",
        "repo": "calc/calc",
        "base_commit": base,
        "patch": patch,
        "test_patch": test_patch,
        "FAIL_TO_PASS": '["test_calc.py::test_add"]',
        "PASS_TO_PASS": '["test_calc.py::test_zero"]',
        "problem_statement": "add() subtracts.",
    }
    (task,) = from_swebench([row], repo)
    assert "def test_add" in task.gold["hidden_tests"]["test_calc.py"]
    info = solve(env, task)
    assert info["success"] and info["passed"] == 2
    *_, last = play(env, task, ["submit"])
    assert not last[4]["success"] and last[4]["score"] == 0.5
    with pytest.raises(ValueError, match="missing field"):
        from_swebench([{"instance_id": "x"}], repo)


def test_directory_importer(tmp_path, env):
    folder = tmp_path / "programs" / "gcd"
    (folder / "tests").mkdir(parents=True)
    (folder / "buggy.py").write_text("def gcd(a, b):\n    return a if b == 0 else gcd(a % b, b)\n")
    (folder / "fixed.py").write_text("def gcd(a, b):\n    return a if b == 0 else gcd(b, a % b)\n")
    (folder / "tests" / "test_gcd.py").write_text(
        "import sys\nsys.setrecursionlimit(100)\nfrom gcd import gcd\n\n"
        "def test_zero():\n    assert gcd(5, 0) == 5\n\ndef test_pair():\n    assert gcd(12, 18) == 6\n"
    )
    pool = shared_pool("local", SandboxConfig())
    (task,) = from_directory(tmp_path / "programs", pool)
    assert task.gold["fail_to_pass"] == ["tests/test_gcd.py::test_pair"]
    assert task.gold["pass_to_pass"] == ["tests/test_gcd.py::test_zero"]
    assert solve(env, task)["success"]
    with pytest.raises(ValueError, match="missing fixed.py"):
        (folder / "fixed.py").unlink()
        from_directory(tmp_path / "programs", pool)
