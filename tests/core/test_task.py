import json

import pytest

from agentgym.task import Task, TaskFileError, TaskSuite, check_suite, write_tasks
from agentgym.testing import register_test_envs

GOOD = {"id": "t1", "env": "agentgym/NoOp-v0", "instruction": "noop", "config": {"length": 2}}


def _write(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_round_trip(tmp_path):
    tasks = [Task(**GOOD), Task(**{**GOOD, "id": "t2", "tags": ["a"], "split": "train"})]
    path = tmp_path / "s.jsonl"
    assert write_tasks(path, tasks) == 2
    suite = TaskSuite.load(path)
    assert suite.tasks == tasks and suite["t2"].tags == ["a"] and len(suite.filter(["a"])) == 1


def test_bad_rows_name_file_line_and_field(tmp_path):
    path = _write(
        tmp_path / "bad.jsonl",
        [
            GOOD,
            '{"id": "t2", "env": ',  # line 2: not JSON
            {**GOOD, "id": "t3", "instruction": 5},  # line 3: wrong type
            {k: v for k, v in GOOD.items() if k != "env"} | {"id": "t4"},  # line 4: missing field
            {**GOOD, "id": "t5", "colour": "red"},  # line 5: unknown field
        ],
    )
    with pytest.raises(TaskFileError) as exc:
        TaskSuite.load(path)
    problems = exc.value.problems
    assert problems[0].startswith(f"{path}:2: <row>: not valid JSON")
    assert f"{path}:3: instruction: Input should be a valid string" in problems
    assert f"{path}:4: env: Field required" in problems
    assert f"{path}:5: colour: Extra inputs are not permitted" in problems
    assert len(problems) == 4


def test_check_suite_validates_env_config_and_ids(tmp_path):
    register_test_envs()
    path = _write(
        tmp_path / "cfg.jsonl",
        [
            GOOD,
            {**GOOD, "id": "t2", "config": {"length": 0}},
            GOOD,
            {**GOOD, "id": "t4", "env": "agentgym/NoOps-v0"},
        ],
    )
    problems = check_suite(path)
    assert problems[0] == f"{path}:2: config.length: Input should be greater than or equal to 1"
    assert problems[1] == f"{path}:3: id: duplicate of line 1 ('t1')"
    assert problems[2].startswith(
        f"{path}:4: env: no environment 'agentgym/NoOps-v0'. Did you mean 'agentgym/NoOp-v0'"
    )
    assert check_suite(_write(tmp_path / "ok.jsonl", [GOOD])) == []


def test_duplicate_ids_rejected_on_load(tmp_path):
    with pytest.raises(TaskFileError, match="duplicate task id 't1'"):
        TaskSuite.load(_write(tmp_path / "d.jsonl", [GOOD, GOOD]))


def test_unknown_suite_lists_builtin_ones():
    with pytest.raises(FileNotFoundError, match="clarify/test"):
        TaskSuite.load("clarify/tset")
