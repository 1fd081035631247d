"""CLI mistakes are one line on stderr and exit 2, before the run starts.

Each probe printed a traceback, ran the whole suite first, or was accepted and then misbehaved.
"""

from __future__ import annotations

import json
import socket

import pytest
from support import one_line_error
from typer.testing import CliRunner

import agentgym
from agentgym.cli import app
from agentgym.task import TaskFileError, TaskSuite, write_tasks
from agentgym.testing import noop_suite

runner = CliRunner()


@pytest.fixture
def noop_file(tmp_path):
    path = tmp_path / "noop.jsonl"
    write_tasks(path, noop_suite(2, length=2).tasks)
    return path


def _eval(noop_file, tmp_path, *extra: str):
    args = ["eval", str(noop_file), "-a", "expert", "--db", str(tmp_path / "r.db"), *extra]
    return runner.invoke(app, args)


@pytest.mark.parametrize("value", ["inf", "nan", "0", "-5"])
def test_time_limit_must_be_positive_and_finite(noop_file, tmp_path, value):
    one_line_error(_eval(noop_file, tmp_path, "--time-limit", value), "--time-limit")
    assert not (tmp_path / "r.db").exists()  # refused before the store is made


def test_evaluate_refuses_a_bad_time_limit(noop_file):
    with pytest.raises(ValueError, match="positive number of seconds"):
        agentgym.evaluate(str(noop_file), "expert", time_limit_s=float("nan"))


def test_db_in_a_path_that_cannot_hold_a_folder(noop_file, tmp_path):
    result = runner.invoke(app, ["eval", str(noop_file), "-a", "expert", "--db", "/dev/null/x.db"])
    one_line_error(result, "/dev/null/x.db")


def test_plot_into_a_missing_folder_is_refused_before_the_run(noop_file, tmp_path):
    result = _eval(noop_file, tmp_path, "--plot", "/nonexistent/dir/p.png")
    one_line_error(result, "--plot", "/nonexistent/dir")
    assert not (tmp_path / "r.db").exists()


@pytest.mark.parametrize(
    ("suite", "option", "says"),
    [
        ("social/negotiation", "judge=nonexistent", "unknown judge"),
        ("swe/humanevalfix", "sandbox=nope", "unknown sandbox"),
        ("kbqa/metaqa-test", "kb=/etc/passwd", "KnowledgeBase"),
    ],
)
def test_env_options_that_cannot_work_fail_the_preflight(tmp_path, suite, option, says):
    result = runner.invoke(
        app,
        [
            "eval",
            suite,
            "-a",
            "random",
            "--limit",
            "1",
            "--db",
            str(tmp_path / "r.db"),
            "-E",
            option,
        ],
    )
    one_line_error(result, says)
    assert not (tmp_path / "r.db").exists()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("algo: [sft\n", "not a valid YAML config"),
        ("x: !!python/object:os.system {}\n", "python/object"),
    ],
)
def test_a_broken_or_unsafe_train_config_is_one_line(tmp_path, text, says):
    config = tmp_path / "train.yaml"
    config.write_text(text)
    one_line_error(runner.invoke(app, ["train", str(config)]), str(config), says)


TRAIN = "model: {path: m}\nenv: {id: Clarify-v0}\n"


@pytest.mark.parametrize(
    ("text", "overrides", "says"),
    [
        (TRAIN + "algo: {nmae: ppo}\n", [], ["algo.nmae: unknown key", "did you mean algo.name"]),
        (TRAIN + "rollout: {group_size: many}\n", [], ["rollout.group_size", "'many'"]),
        (
            TRAIN + "algo: {name: sft, clip_high: 0.3}\n",
            [],
            ["algo.clip_high: 'sft' does not read it; it reads epochs"],
        ),
        (TRAIN, ["rollout.group_sise=4"], ["override 'rollout.group_sise=4'", "allowed: "]),
        (TRAIN, ["model.lora.rank=4"], ["model.lora.rank: unknown key", "allowed: r, alpha"]),
        (TRAIN, ["rollout.engine=fast"], ["rollout.engine", "'local' or 'vllm'", "'fast'"]),
        (TRAIN, ["algo.name=sft", "algo.clip_high=0.3"], ["override 'algo.clip_high=0.3'"]),
    ],
    ids=[
        "unknown-key",
        "bad-type",
        "unread-algo-field",
        "bad-override-key",
        "bad-lora-key",
        "bad-override-value",
        "unread-override",
    ],
)
def test_a_train_config_that_fails_validation_is_one_line(tmp_path, text, overrides, says):
    config = tmp_path / "train.yaml"
    config.write_text(text)
    args = ["train", str(config), *[a for o in overrides for a in ("-c", o)]]
    result = runner.invoke(app, args)
    one_line_error(result, *says, *[str(config)] * (not overrides))
    assert "validation error" not in result.output  # not pydantic's text


def test_train_without_a_checkpoint_says_how_to_make_one(tmp_path):
    config = tmp_path / "train.yaml"
    model, out = tmp_path / "nothing-here", tmp_path / "out"
    config.write_text(f"model: {{path: {model}}}\nenv: {{id: Clarify-v0}}\nout_dir: {out}\n")
    result = runner.invoke(app, ["train", str(config)])
    one_line_error(result, f"no checkpoint at {model}", f"agentgym model init {model}")
    assert not out.exists()  # refused before the run made anything


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["eval", "--bogus"], "No such option: --bogus"),
        (["eval"], "Missing argument"),
        (["nope"], "No such command"),
        (["tasks", "show"], "Missing argument"),
        (["eval", "clarify/test", "--time-limit", "abc"], "--time-limit"),
    ],
)
def test_usage_errors_are_one_line_not_a_box(args, says):
    one_line_error(runner.invoke(app, args), says, "--help")


def test_help_and_bare_groups_still_print_help():
    assert "Usage:" in runner.invoke(app, ["eval", "--help"]).output
    assert "validate" in runner.invoke(app, ["tasks"]).output


def test_hf_agent_on_a_folder_without_a_checkpoint(noop_file, tmp_path):
    one_line_error(_eval(noop_file, tmp_path, "-a", "hf:/etc"), "hf:/etc", "config.json")


def test_serve_on_a_busy_port_is_one_line(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        result = runner.invoke(app, ["serve", str(tmp_path), "--port", str(port)])
    one_line_error(result, f"127.0.0.1:{port}", "in use")


HUGE = "9" * 5000


def test_a_huge_integer_in_a_task_row_names_file_line_and_field(tmp_path):
    rows = tmp_path / "rows.jsonl"
    good = {"id": "a", "env": "agentgym/NoOp-v0", "instruction": "i"}
    rows.write_text(
        "\n".join(
            [
                json.dumps(good),
                '{"id": "b", "env": "agentgym/NoOp-v0", "instruction": "i", "difficulty": '
                + HUGE
                + "}",
                "not json",
                '{"id": "c", "env": "agentgym/NoOp-v0", "config": {"n": [' + HUGE + "]}}",
            ]
        )
        + "\n"
    )
    result = runner.invoke(app, ["tasks", "validate", str(rows)])
    assert result.exit_code == 2, result.output
    assert f"{rows}:2: difficulty: an integer of 5000 digits" in result.output
    assert f"{rows}:3: <row>: not valid JSON" in result.output
    assert f"{rows}:4: config.n.0: an integer of 5000 digits" in result.output
    assert f"{rows}:4: instruction: Field required" not in result.output  # the row stops there
    assert "Traceback" not in result.output and "set_int_max_str_digits" not in result.output
    with pytest.raises(TaskFileError, match=r"rows.jsonl:2: difficulty"):
        TaskSuite.load(rows)


def test_a_huge_integer_in_an_env_option_names_the_option(tmp_path):
    result = runner.invoke(
        app,
        ["eval", "kbqa/metaqa-test", "-a", "random", "--limit", "1"]
        + ["--db", str(tmp_path / "r.db"), "-E", f"handles={HUGE}"],
    )
    one_line_error(result, "option handles", "4300 digits")
    assert not (tmp_path / "r.db").exists()
