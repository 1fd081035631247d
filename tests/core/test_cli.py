import json

import pytest
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.task import write_tasks
from agentgym.testing import noop_suite

runner = CliRunner()


@pytest.fixture
def noop_file(tmp_path):
    path = tmp_path / "noop.jsonl"
    write_tasks(path, noop_suite(6, length=3).tasks)
    return path


def test_envs_lists_clarify():
    result = runner.invoke(app, ["envs"])
    assert result.exit_code == 0 and "agentgym/Clarify-v0" in result.output


def test_tasks_list_and_show():
    listed = runner.invoke(app, ["tasks", "list"])
    assert (
        listed.exit_code == 0
        and "clarify/test" in listed.output
        and "clarify/train" in listed.output
    )
    shown = runner.invoke(app, ["tasks", "show", "clarify/test"])
    assert shown.exit_code == 0 and json.loads(shown.output)["env"] == "agentgym/Clarify-v0"


def test_eval_report_plot_export(tmp_path, noop_file):
    db = tmp_path / "r.db"
    result = runner.invoke(
        app,
        [
            "eval",
            str(noop_file),
            "-a",
            "expert",
            "-a",
            "random",
            "--db",
            str(db),
            "-k",
            "2",
            "-c",
            "3",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "12/12" in result.output and "agentgym report" in result.output

    rep = runner.invoke(app, ["report", str(db), "--json"])
    summaries = {r["agent"]: r["groups"][0] for r in json.loads(rep.output)}
    assert summaries["expert"]["success_rate"] == 1.0 and summaries["expert"]["episodes"] == 12
    assert summaries["random"]["success_rate"] == 1.0  # NoOp's only available action is noop

    png = tmp_path / "plot.png"
    assert runner.invoke(app, ["report", str(db), "--plot", str(png)]).exit_code == 0
    assert png.read_bytes()[:4] == b"\x89PNG"

    out = tmp_path / "chat.jsonl"
    exp = runner.invoke(app, ["export", str(db), "--format", "chat", "-o", str(out)])
    assert exp.exit_code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 24
    roles = [m["role"] for m in rows[0]["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]


def test_rerun_resumes(tmp_path, noop_file):
    db = str(tmp_path / "r.db")
    runner.invoke(app, ["eval", str(noop_file), "-a", "expert", "--db", db, "--limit", "2"])
    runner.invoke(app, ["eval", str(noop_file), "-a", "expert", "--db", db, "--limit", "2"])
    rep = json.loads(runner.invoke(app, ["report", db, "--json"]).output)
    assert len(rep) == 1 and rep[0]["groups"][0]["episodes"] == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["eval", "clarify/test", "-a", "gpt"],
            "unknown agent 'gpt'; allowed: expert, human, random",
        ),
        (["eval", "clarify/nope", "-a", "expert"], "no task suite 'clarify/nope'"),
        (
            ["eval", "clarify/test", "-a", "expert", "--tag", "nosuchtag"],
            "no task in clarify/test has all of the tags nosuchtag",
        ),
        (["report", "missing.db"], "no database at missing.db"),
        (["export", "missing.db", "--format", "xml"], "--format must be 'episodes' or 'chat'"),
    ],
)
def test_bad_arguments_give_one_line_errors(args, message):
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_validate_reports_bad_rows(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "env": "agentgym/Clarify-v0", "instruction": "i", "config": {}}\n')
    result = runner.invoke(app, ["tasks", "validate", str(bad)])
    assert result.exit_code == 2 and f"{bad}:1: config.domain: Field required" in result.output
    assert runner.invoke(app, ["tasks", "validate", "clarify/test"]).exit_code == 0


def test_play_in_the_terminal(noop_file):
    result = runner.invoke(app, ["play", "NoOp-v0", "--task", "noop-00001"], input="noop\n" * 10)
    assert result.exit_code == 0, result.output
    assert "success: score 1.000, 10 steps" in result.output
    quit_early = runner.invoke(app, ["play", "NoOp-v0", "--task", "noop-00001"], input="noop\n")
    # the input ends (Ctrl-D) before the game does: the player stopped it, not an error
    assert quit_early.exit_code == 0 and "closed the input" in quit_early.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["eval", "clarify/test", "-a", "openai:"], "bad model spec 'openai:'"),
        (["eval", "clarify/test", "-a", "openai:gpt-4o-mini"], "needs an API key"),
        (["eval", "clarify/test", "-a", "hf:/no/such/dir"], "no checkpoint directory there"),
    ],
)
def test_preflight_refuses_agents_that_cannot_run(args, message, monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = runner.invoke(app, [*args, "--db", str(tmp_path / "r.db"), "--limit", "2"])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r.db").exists()  # refused before anything was stored


def test_preflight_refuses_unregistered_envs(tmp_path):
    rows = tmp_path / "t.jsonl"
    rows.write_text('{"id": "x", "env": "agentgym/Nope-v0", "instruction": "i", "config": {}}\n')
    result = runner.invoke(app, ["eval", str(rows), "-a", "expert", "--db", str(tmp_path / "r.db")])
    assert result.exit_code == 2 and "no environment 'agentgym/Nope-v0'" in result.output


def test_episode_errors_give_a_summary_and_a_nonzero_exit(tmp_path, noop_file, monkeypatch):
    from agentgym.testing.noop import NoOpEnv

    def broken(self, action):
        raise RuntimeError("the env broke")

    monkeypatch.setattr(NoOpEnv, "_step", broken)
    db = str(tmp_path / "r.db")
    result = runner.invoke(app, ["eval", str(noop_file), "-a", "expert", "--db", db])
    assert result.exit_code == 1
    assert "6 episode(s) failed with RuntimeError" in result.output
    assert "the env broke" in result.output and "--retry-errors" in result.output


def test_plot_at_full_success(tmp_path, noop_file):
    from agentgym.metrics import wilson_interval

    assert all(
        wilson_interval(n, n)[1] == 1.0 and wilson_interval(0, n)[0] == 0.0 for n in range(1, 200)
    )
    db, png = str(tmp_path / "r.db"), tmp_path / "p.png"
    result = runner.invoke(
        app, ["eval", str(noop_file), "-a", "expert", "--db", db, "--plot", str(png)]
    )
    assert result.exit_code == 0, result.output
    assert png.stat().st_size > 0


def test_model_init_does_not_overwrite(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    result = runner.invoke(app, ["model", "init", str(tmp_path)])
    assert result.exit_code == 2 and "is not empty; pass --force" in result.output
    assert (tmp_path / "notes.txt").read_text() == "mine" and not (
        tmp_path / "config.json"
    ).exists()


def test_export_rows_name_their_run_and_agent(tmp_path, noop_file):
    db = str(tmp_path / "r.db")
    assert (
        runner.invoke(
            app, ["eval", str(noop_file), "-a", "expert", "-a", "random", "--db", db]
        ).exit_code
        == 0
    )
    rows = [
        json.loads(ln)
        for ln in runner.invoke(app, ["export", db]).output.splitlines()
        if ln.startswith("{")
    ]
    assert len(rows) == 12 and {r["agent"] for r in rows} == {"expert", "random"}
    assert all(len(r["run_id"]) >= 8 for r in rows)
    only = runner.invoke(app, ["export", db, "--agent", "random", "--format", "chat"]).output
    chat = [json.loads(ln) for ln in only.splitlines() if ln.startswith("{")]
    assert len(chat) == 6 and {r["agent"] for r in chat} == {"random"} and "messages" in chat[0]
    missing = runner.invoke(app, ["export", db, "--agent", "human"])
    assert missing.exit_code == 2 and "agents there: ['expert', 'random']" in missing.output


def test_play_commands_list_actions_and_quit():
    result = runner.invoke(
        app,
        ["play", "Household-v0", "--task", "household-valid_seen-0000"],
        input=":actions\n:quit\n",
    )  # the id lives in another split than the env's default suite
    assert result.exit_code == 0 and "the player quit" in result.output  # deliberate: not 130
    assert "task household-valid_seen-0000" in result.output
    assert "(:actions lists all)" in result.output and "  go to towelholder 1\n" in result.output


def test_play_hint_keeps_bracketed_actions():
    result = runner.invoke(app, ["play", "WebShop-v0", "--suite", "webshop/test"], input=":quit\n")
    assert "e.g. search[<keywords>]" in result.output, result.output


def test_play_unknown_task_is_one_line():
    result = runner.invoke(app, ["play", "Household-v0", "--task", "nope"], input="")
    assert result.exit_code == 2 and "no task 'nope' in the household/* suites" in result.output


def test_env_options_listed_checked_and_part_of_the_run_id(tmp_path):
    listed = runner.invoke(app, ["envs", "--options", "KBQA-v0"])
    assert listed.exit_code == 0 and "handles" in listed.output and "bool" in listed.output
    db = str(tmp_path / "r.db")
    base = ["eval", "kbqa/metaqa-test", "-a", "expert", "--limit", "2", "--db", db]
    for bad, message in [
        (["-E", "handle=true"], "has no option 'handle'; options: suite, render_mode, kb, handles"),
        (["-E", "handles=maybe"], "option handles='maybe': Input should be a valid boolean"),
        (["-E", "handles"], "write KEY=VALUE"),
    ]:
        result = runner.invoke(app, [*base, *bad])
        assert result.exit_code == 2 and message in result.output, result.output
    assert runner.invoke(app, base).exit_code == 0
    assert runner.invoke(app, [*base, "-E", "handles=true"]).exit_code == 0
    runs = json.loads(runner.invoke(app, ["report", db, "--json"]).output)
    assert len(runs) == 2  # the option made a second run, not a resume of the first
    from agentgym.store import Store

    store = Store(db)
    firsts = {r["config"].get("env_options", {}).get("handles", False): [
        e.first_observation for e in store.episodes(r["id"])] for r in store.runs()}  # fmt: skip
    assert all("@1 = " in o for o in firsts[True]) and not any("@1" in o for o in firsts[False])


def test_nested_sandboxes_are_refused_before_the_run(tmp_path):
    db = tmp_path / "r.db"
    args = ["eval", "swe/humanevalfix", "-a", "expert", "--isolate", "docker", "--db", str(db)]
    result = runner.invoke(app, args)
    assert (
        result.exit_code == 2
        and "Swe-v0 runs its commands in a sandbox of its own" in result.output
    )
    assert not db.exists()


def test_preflight_refuses_tasks_the_agent_cannot_play(tmp_path):
    from agentgym.envs.household.searcher import PhasedSearchAgent
    from agentgym.runner import _check_tasks
    from agentgym.task import TaskSuite

    with pytest.raises(ValueError) as refused:  # the phased searcher plays put, examine, clean
        _check_tasks("search", PhasedSearchAgent(), TaskSuite.load("household/valid_seen"))
    assert "search cannot play 65 of 140 tasks: the searcher plays" in str(refused.value)
    assert "'pick_two_obj_and_place' (24, e.g. household-valid_seen-0010)" in str(refused.value)
    db = tmp_path / "r.db"  # search: plays every type, so the preflight lets a pick-two run go
    ok = ["eval", "household/valid_seen", "-a", "search:", "--tag", "puttwo", "--limit", "2"]
    assert runner.invoke(app, [*ok, "--db", str(db)]).exit_code == 0


def test_the_command_imports_no_sandbox_module_until_one_is_used():
    import subprocess
    import sys

    code = (
        "import sys, agentgym.cli; "
        "print(sorted(m for m in sys.modules if m.startswith('agentgym.sandbox')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    result = runner.invoke(app, ["sandbox", "--help"])
    assert result.exit_code == 0 and "doctor" in result.output and "cleanup" in result.output


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        (
            '{"id": "a", "env": "agentgym/NoOp-v0", "instruction": "x"}\n{bad\n',
            ":2: <row>: not valid",
        ),
        ('{"env": "agentgym/NoOp-v0", "instruction": "x"}\n', ":1: id: Field required"),
        ("[1, 2]\n", ":1: <row>:"),
        ("", "holds no task: a suite file has one JSON task per line"),
        (None, "no task suite"),
    ],
    ids=["malformed-line", "missing-id", "not-an-object", "empty", "no-such-file"],
)
def test_eval_on_a_bad_task_file_says_one_line_and_loses_nothing(tmp_path, noop_file, rows, said):
    db = tmp_path / "r.db"
    assert (
        runner.invoke(app, ["eval", str(noop_file), "-a", "expert", "--db", str(db)]).exit_code == 0
    )
    before = _dump(db)
    bad = tmp_path / "bad.jsonl"
    if rows is not None:
        bad.write_text(rows, encoding="utf-8")
    result = runner.invoke(app, ["eval", str(bad), "-a", "expert", "--db", str(db)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], result.output
    if rows and "bad row" in lines[0]:  # what a good row is
        assert "A task row is one JSON object per line with id, env, instruction" in lines[0]
    assert _dump(db) == before


def _dump(db):
    """The store's content (the WAL included). Not its bytes: SQLite may checkpoint the WAL into
    the main file whenever the first run's last connection closes, which changes the file's
    header but no row."""
    import sqlite3

    with sqlite3.connect(db) as con:
        return list(con.iterdump())


def test_eval_with_tags_that_match_nothing_lists_the_tags_there_are(tmp_path):
    result = runner.invoke(
        app,
        ["eval", "clarify/test", "-a", "expert", "--tag", "nosuch", "--db", str(tmp_path / "r.db")],
    )
    assert result.exit_code == 2
    assert "no task in clarify/test has all of the tags nosuch (its tags: easy," in result.output
    assert not (tmp_path / "r.db").exists()
