"""Hostile input against the store: text that is not Unicode, keys in agent specs, and store
files changed by hand. Each probe failed on the code before its fix."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

import agentgym
from agentgym.agent import Action
from agentgym.episode import Usage
from agentgym.store import Store, StoreError
from agentgym.task import TaskSuite

KEY = "sk-live-0123456789abcdefSECRET"


class _Endpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint whose every reply is ``reply`` (raw JSON text)."""

    reply = r'"\ud800"'  # JSON for a lone surrogate: the SDK hands Python a str no codec encodes

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = (
            '{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": '
            '[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": '
            + self.reply
            + '}}], "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}'
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def _suite(n: int = 2) -> TaskSuite:
    return TaskSuite.load("clarify/test").filter(limit=n)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "agentgym.cli", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


# ---------------------------------------------------------------------------- 1: lone surrogates
def test_a_lone_surrogate_from_the_endpoint_is_stored_escaped_and_marked(endpoint, tmp_path):
    spec = f"openai:m?base_url={endpoint}&api_key=unused"
    result = agentgym.evaluate(_suite(), spec, db=tmp_path / "s.db", max_steps=2)
    assert len(result.new_episodes) == 2
    rows = result.episode_rows()
    assert [json.loads(r["escaped"])[0] for r in rows] == ["steps.0.action"] * 2
    episode = next(result.store.episodes(result.run_id))
    assert episode.steps[0].action == "\\ud800"  # escaped text, valid UTF-8
    again = agentgym.evaluate(_suite(), spec, db=result.store, max_steps=2)  # a rerun resumes
    assert again.run_id == result.run_id and again.progress.skipped == 2


def test_a_surrogate_in_every_text_field_is_escaped(tmp_path):
    store = Store(tmp_path / "s.db")
    ep = agentgym.Episode(
        task_id="t\ud800", env_id="e", instruction="i\udcff", error="boom \ud83d",
        steps=[agentgym.Step(t=0, action="a", observation="o\ud800", reward=0.0,
                             info={"k\ud800": ["v\udc80"]}, usage=Usage(history="h\ud800"))],
    )  # fmt: skip
    store.start_run("r\ud800", "name\ud800", "suite", "agent\ud800", {"x": "\ud800"}, {}, None)
    store.save_episode("r", ep, ["tag\ud800"])
    row = store.episode_rows("r")[0]
    assert row["task_id"] == "t\\ud800" and row["tags"] == ["tag\\ud800"]
    assert set(json.loads(row["escaped"])) == {
        "task_id", "instruction", "error", "tags.0", "steps.0.observation",
        "steps.0.info.<key>", "steps.0.info.k\\ud800.0", "steps.0.usage.history",
    }  # fmt: skip
    assert store.runs()[0]["agent"] == "agent\\ud800"


class _HugeUsage:
    """Claims more tokens than SQLite's integers hold: that episode cannot be stored as it is."""

    def __init__(self, env):
        self.env = env

    def reset(self, info):
        self.huge = info.get("task_id", "").endswith("0") or info.get("seed", 0) % 2 == 0

    def act(self, observation, info):
        usage = Usage(prompt_tokens=10**30 if self.huge else 1)
        return Action(str(self.env.unwrapped.expert_action()), usage)


def test_an_episode_the_store_refuses_is_an_error_episode_and_the_run_goes_on(tmp_path):
    result = agentgym.evaluate(_suite(4), _HugeUsage, db=tmp_path / "s.db")
    rows = result.episode_rows()
    assert len(rows) == 4
    errors = [r for r in rows if r["status"] == "error"]
    assert errors and len(errors) < 4
    assert all("could not be stored" in r["error"] and "too large" in r["error"] for r in errors)


# ---------------------------------------------------------------------------- 3: keys
def test_an_api_key_in_a_spec_reaches_neither_the_store_nor_any_output(endpoint, tmp_path):
    from agentgym.viewer.server import ViewerThread

    db = tmp_path / "k.db"
    spec = f"openai:m?base_url=http://user:PASSWORD@{endpoint[7:]}&api_key={KEY}"
    spec = spec.replace("user:PASSWORD@", "")  # the endpoint itself takes no password
    agentgym.evaluate(_suite(1), spec, db=db, max_steps=1, name=f"try {KEY}").store.close()
    raw = "\n".join(sqlite3.connect(db).iterdump())
    assert KEY not in raw and "api_key=***" in raw
    report = _cli("report", db.name, cwd=tmp_path)
    export = _cli("export", db.name, cwd=tmp_path)
    assert report.returncode == 0 and export.returncode == 0, report.stderr + export.stderr
    assert "api_key=***" in export.stdout and KEY not in report.stdout + export.stdout
    with ViewerThread(db) as viewer:
        shown = httpx.get(viewer.url + "api/runs").text
    assert "api_key=***" in shown and KEY not in shown


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("openai:m?api_key=abc&rpm=5", "openai:m?api_key=***&rpm=5"),
        ("openai:m?API%5FKEY=abc", "openai:m?API%5FKEY=***"),
        ("litellm:x?base_url=http://u:pw@h:8/v1&token=t", "litellm:x?base_url=http://u:***@h:8/v1&token=***"),
        ("run with hf_abcdefghijklmnop12 inside", "run with hf-*** inside"),
        ("openai:m?base_url=http://127.0.0.1:8000/v1&api_key_env=MY_KEY", None),
        ("hf:smollm2?max_batch_size=8", None),
    ],
)  # fmt: skip
def test_redaction_masks_secrets_and_nothing_else(spec, shown):
    from agentgym.redact import redact, redact_text

    assert redact_text(spec) == (shown or spec)
    assert redact({"a": [spec], "hf_token": "x", "max_tokens": 5}) == {
        "a": [shown or spec], "hf_token": "***", "max_tokens": 5}  # fmt: skip


def test_a_store_written_before_redaction_shows_no_key(tmp_path):
    from agentgym.viewer.server import ViewerThread

    db = tmp_path / "old.db"
    Store(db).close()
    old = f"openai:m?api_key={KEY}&rpm=5"
    conn = sqlite3.connect(db)
    conn.execute("insert into runs values ('r1', ?, 's', ?, ?, '{}', null, 0)",
                 [old, old, json.dumps({"agent": old, "api_key": "plain"})])  # fmt: skip
    conn.commit()
    conn.close()
    runs = Store(db, read_only=True).runs()
    assert (
        runs[0]["agent"] == "openai:m?api_key=***&rpm=5" and runs[0]["config"]["api_key"] == "***"
    )
    with ViewerThread(db) as viewer:
        shown = httpx.get(viewer.url + "api/runs").text
    assert KEY not in shown and "plain" not in shown


def test_two_keys_share_a_run_and_a_key_is_read_from_a_named_variable(
    endpoint, tmp_path, monkeypatch
):
    from agentgym.llm.clients import ClientOptions

    a = agentgym.evaluate(_suite(1), f"openai:m?base_url={endpoint}&api_key=k1", db=tmp_path / "a.db",
                          max_steps=1)  # fmt: skip
    b = agentgym.evaluate(_suite(1), f"openai:m?base_url={endpoint}&api_key=k2", db=a.store,
                          max_steps=1)  # fmt: skip
    assert a.run_id == b.run_id and b.progress.skipped == 1
    monkeypatch.setenv("MY_PROVIDER_KEY", KEY)
    assert ClientOptions(api_key_env="MY_PROVIDER_KEY").key() == KEY
    with pytest.raises(ValueError, match="api_key_env=NOPE_NOT_SET: that variable is not set"):
        ClientOptions(api_key_env="NOPE_NOT_SET").key()


# ---------------------------------------------------------------------------- 11: crafted stores
def _store_with_a_run(db: Path, *tamper: str) -> str:
    """A store holding one expert run, then changed behind agentgym's back by ``tamper`` SQL."""
    result = agentgym.evaluate(_suite(1), "expert", db=db)
    result.store.close()
    conn = sqlite3.connect(db)
    for sql in tamper:
        conn.execute(sql)
    conn.commit()
    conn.close()
    return result.run_id


def test_a_run_config_that_is_not_json_is_one_line_naming_the_file(tmp_path):
    db = tmp_path / "bad.db"
    _store_with_a_run(db, "update runs set config = '{not json'")
    for args in (["report", "bad.db"], ["eval", "clarify/test", "-a", "expert", "--limit", "1",
                                        "--db", "bad.db"]):  # fmt: skip
        r = _cli(*args, cwd=tmp_path)
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        assert r.returncode == 2 and len(lines) == 1, r.stderr[-2000:]
        assert "bad.db" in lines[0] and "runs.config" in lines[0] and "not JSON" in lines[0]


def test_export_of_a_row_agentgym_did_not_write_is_one_line(tmp_path):
    db = tmp_path / "odd.db"
    _store_with_a_run(db, "update episodes set duration_s = 'long'")
    r = _cli("export", "odd.db", cwd=tmp_path)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(lines) == 1, r.stderr[-2000:]
    assert "odd.db" in lines[0] and "duration_s" in lines[0] and "'long'" in lines[0]


def test_a_store_with_a_trigger_is_not_opened_for_writing(tmp_path):
    db = tmp_path / "trap.db"
    _store_with_a_run(db, "create table loot (x)",
                      "create trigger grab after insert on episodes begin "
                      "insert into loot values (new.first_observation); end")  # fmt: skip
    with pytest.raises(
        StoreError, match=r"trap.db has SQLite triggers agentgym did not make \(grab\)"
    ):
        agentgym.evaluate(_suite(2), "expert", db=db)
    assert Store(db, read_only=True).runs()  # readers still read it
    assert sqlite3.connect(db).execute("select count(*) from loot").fetchone() == (0,)


def test_the_viewer_sends_a_huge_observation_cut_and_pages_the_rest(tmp_path):
    from agentgym.viewer.server import ViewerThread

    db = tmp_path / "big.db"
    store = Store(db)
    huge = "0123456789" * 5_000_000  # 50 MB of observation (the probe's had 200 MB)
    ep = agentgym.Episode(task_id="t", env_id="e", first_observation=huge, steps=[
        agentgym.Step(t=0, action="look", observation=huge, reward=0.0, info={"blob": huge})])  # fmt: skip
    store.start_run("r", "big", "s", f"openai:m?api_key={KEY}", {}, {}, None)
    store.save_episode("r", ep)
    store.close()
    del ep, store
    with ViewerThread(db) as viewer:
        r = httpx.get(viewer.url + "api/episode", params={"run": "r", "task": "t"}, timeout=120)
        page = httpx.get(viewer.url + "api/episode/text", timeout=120, params={
            "run": "r", "task": "t", "t": 0, "field": "observation", "offset": 49_999_995})  # fmt: skip
        bad = httpx.get(viewer.url + "api/episode/text", params={
            "run": "r", "task": "t", "field": "observation"})  # fmt: skip
    assert r.status_code == 200 and len(r.content) < 1_000_000
    view = r.json()
    assert view["clipped"] == {"first_observation": 50_000_000} and KEY not in r.text
    step = view["steps"][0]
    assert step["clipped"] == {"observation": 50_000_000, "info": len(json.dumps({"blob": huge}))}
    assert step["observation"].startswith("0123456789") and "more characters" in step["observation"]
    assert page.json() == {"field": "observation", "offset": 49_999_995, "text": "56789",
                           "chars": 50_000_000}  # fmt: skip
    assert bad.status_code == 404 and "no field 'observation' in an episode" in bad.text


def _open_store(path: str) -> str:
    try:
        Store(path).close()
        return "ok"
    except StoreError as e:
        return str(e)


def test_processes_opening_one_new_store_at_once_all_get_it(tmp_path):
    """Eval shards start side by side on one new ``eval.db``; each sets up WAL and the schema.
    Before the retry, 14 of 40 four-process opens had one fail with "database is locked"."""
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(4) as pool:
        for trial in range(12):
            path = str(tmp_path / f"eval-{trial}.db")
            assert pool.map(_open_store, [path] * 4) == ["ok"] * 4
