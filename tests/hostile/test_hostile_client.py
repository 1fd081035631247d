"""Hostile replies to the API clients: a lone surrogate from the model, an error that echoes the
key, and keys whose value holds ``;``, ``#`` or a space. Real local HTTP servers on 127.0.0.1,
reached through the real OpenAI SDK; each probe failed on the code before its fix."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

import agentgym
from agentgym.task import TaskSuite

KEY = "Zq8SECRETvalue0123456789"
"""Not shaped like a provider key (no ``sk-``): only knowing the exact value masks it."""


REPLY = (
    '{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": '
    '[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": '
    '"\\ud800"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}'
)
"""A completion whose text is a lone surrogate (JSON allows the escape; no codec encodes it)."""


class _Endpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint: ``mode`` "surrogate" replies with a lone surrogate, "401"
    refuses with OpenAI's message echoing the Authorization header, "400" refuses plainly."""

    mode = "surrogate"

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("content-length") or 0))
        status, body = 200, REPLY
        if self.mode == "401":
            message = f"Incorrect API key provided: {self.headers.get('authorization')}."
            status = 401
            body = json.dumps({"error": {"message": message, "type": "invalid_request_error",
                                         "param": None, "code": "invalid_api_key"}})  # fmt: skip
        elif self.mode == "400":
            status, body = 400, '{"error": {"message": "no", "type": "invalid_request_error"}}'
        data = body.encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[type[_Endpoint]]:
    handler = type("Endpoint", (_Endpoint,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    handler.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield handler
    server.shutdown()
    server.server_close()


def _suite(n: int = 2) -> TaskSuite:
    return TaskSuite.load("clarify/test").filter(limit=n)


def _cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "agentgym.cli", *args]
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=300, env=os.environ | env
    )


# ------------------------------------------------------------------- a lone surrogate in a reply
def test_a_lone_surrogate_reply_is_an_invalid_action_not_an_error(endpoint, tmp_path):
    """The reply goes back in the history: the next request must still serialise (cache key,
    SDK), with the cache off (the default) and on."""
    for cache in ("", f"&cache={tmp_path / 'llm.db'}"):
        spec = f"openai:m?base_url={endpoint.url}&api_key=unused{cache}"
        result = agentgym.evaluate(_suite(), spec, db=tmp_path / f"s{bool(cache)}.db", max_steps=3)
        rows = result.episode_rows()
        assert [r["status"] for r in rows] == ["limit", "limit"], rows[0]["error"]
        assert [r["invalid_steps"] for r in rows] == [3, 3]  # an invalid action, every turn
        for episode in result.store.episodes(result.run_id):
            assert [s.action for s in episode.steps] == ["\\ud800"] * 3
        assert json.loads(rows[0]["escaped"]) == [f"steps.{t}.action" for t in range(3)]


def test_retry_errors_reruns_a_surrogate_reply_as_an_invalid_action(endpoint, tmp_path):
    spec = f"openai:m?base_url={endpoint.url}&api_key=unused"
    endpoint.mode = "400"
    first = _cli("eval", "clarify/test", "--limit", "2", "-a", spec, "--db", "s.db",
                 "--max-steps", "2", cwd=tmp_path)  # fmt: skip
    assert first.returncode == 1 and "2 episode(s) failed" in first.stderr, first.stderr
    endpoint.mode = "surrogate"
    again = _cli("eval", "clarify/test", "--limit", "2", "-a", spec, "--db", "s.db",
                 "--max-steps", "2", "--retry-errors", cwd=tmp_path)  # fmt: skip
    assert again.returncode == 0, again.stderr
    store = agentgym.Store(tmp_path / "s.db", read_only=True)
    rows = store.episode_rows(store.runs()[0]["id"])
    assert [r["status"] for r in rows] == ["limit", "limit"]


# ------------------------------------------------------------------ an error that echoes the key
def test_a_401_echoing_the_key_stores_and_shows_it_nowhere(endpoint, tmp_path):
    from agentgym.viewer.server import ViewerThread

    endpoint.mode = "401"
    spec = f"openai:m?base_url={endpoint.url}"  # the key comes from the environment
    run = _cli("eval", "clarify/test", "--limit", "2", "-a", spec, "--db", "k.db", cwd=tmp_path,
               OPENAI_API_KEY=KEY)  # fmt: skip
    assert run.returncode == 1 and "AuthenticationError" in run.stderr, run.stderr
    assert "Incorrect API key provided: Bearer ***" in run.stderr  # the console summary
    assert KEY not in run.stdout + run.stderr
    db = tmp_path / "k.db"
    raw = "\n".join(sqlite3.connect(db).iterdump())
    assert "Bearer ***" in raw and KEY not in raw
    report, export = _cli("report", "k.db", cwd=tmp_path), _cli("export", "k.db", cwd=tmp_path)
    assert report.returncode == 0 and export.returncode == 0, report.stderr + export.stderr
    assert "Bearer ***" in export.stdout and KEY not in report.stdout + export.stdout
    store = agentgym.Store(db, read_only=True)
    row = store.episode_rows(store.runs()[0]["id"])[0]
    with ViewerThread(db) as viewer:
        shown = [
            httpx.get(viewer.url + "api/runs").text,
            httpx.get(viewer.url + f"api/runs/{row['run_id']}/episodes").text,
            httpx.get(viewer.url + "api/episode",
                      params={"run": row["run_id"], "task": row["task_id"]}).text,
            httpx.get(viewer.url + "api/episode/text",
                      params={"run": row["run_id"], "task": row["task_id"], "field": "error"}).text,
        ]  # fmt: skip
    assert "Bearer ***" in shown[2] + shown[3] and not any(KEY in s for s in shown)


def test_the_client_masks_its_key_in_what_it_raises_in_process(endpoint):
    """Through the SDK in this process: the raised error, its body and its traceback."""
    import traceback

    from agentgym.llm import ChatRequest
    from agentgym.llm.clients import ClientOptions, OpenAIClient

    endpoint.mode = "401"
    client = OpenAIClient("m", ClientOptions(base_url=endpoint.url, api_key=KEY))
    with pytest.raises(Exception) as caught:
        client.complete(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
    assert type(caught.value).__name__ == "AuthenticationError"
    shown = "".join(traceback.format_exception(caught.value)) + repr(caught.value.body)
    assert "Bearer ***" in shown and KEY not in shown


# ----------------------------------------------------------- a key whose value holds ; # or space
@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("openai:m?api_key=sekret;TAIL", "openai:m?api_key=***"),
        ("openai:m?api_key=sekret#TAIL&rpm=5", "openai:m?api_key=***&rpm=5"),
        ("openai:m?api_key=sekret TAIL&rpm=5", "openai:m?api_key=***&rpm=5"),
        ("openai:m?base_url=http://h/v1?token=sekret;TAIL", "openai:m?base_url=http://h/v1?token=***"),
    ],
)  # fmt: skip
def test_a_key_is_masked_whole_as_the_client_reads_it(spec, shown):
    from agentgym.llm.factory import split_spec
    from agentgym.redact import redact_text

    assert redact_text(spec) == shown
    if "api_key" in spec:
        used = split_spec(spec)[2]["api_key"]  # what the client sends
        assert "TAIL" in used and "TAIL" not in redact_text(spec)


def test_a_key_with_a_semicolon_reaches_no_stored_run(endpoint, tmp_path):
    spec = f"openai:m?base_url={endpoint.url}&api_key=sekret;TAIL"
    agentgym.evaluate(_suite(1), spec, db=tmp_path / "s.db", max_steps=1).store.close()
    raw = "\n".join(sqlite3.connect(tmp_path / "s.db").iterdump())
    assert "TAIL" not in raw and "api_key=***" in raw


def test_scrubbing_reaches_causes_notes_and_text_built_elsewhere():
    import traceback

    from agentgym.redact import scrub_exception

    class Computed(Exception):
        def __str__(self) -> str:  # text built at format time: args cannot be rewritten
            return f"refused {KEY}"

    try:
        try:
            raise ValueError(f"inner {KEY}")
        except ValueError as inner:
            outer = KeyError({"detail": [f"Bearer {KEY}"]})
            outer.add_note(f"note {KEY}")
            raise outer from inner
    except KeyError as e:
        caught = e
    same = scrub_exception(caught, KEY)
    shown = "".join(traceback.format_exception(same))
    assert same is caught and KEY not in shown and shown.count("***") == 3
    plain = scrub_exception(Computed(), KEY)
    assert type(plain) is RuntimeError and str(plain) == "Computed: refused ***"
    assert scrub_exception(caught, "EMPTY") is caught  # the no-key placeholder is not a secret
