"""`agentgym serve --record`: per-session token ids and logprobs, with real `openai` clients."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import openai
import pytest

from agentgym.llm.recording import Recorder, read_calls
from agentgym.llm.sampling import SamplingSpec

SYSTEM = {"role": "system", "content": "You pick movies."}
FIRST = {"role": "user", "content": "The user wants one of these 8 movies."}
KEY = "k" * 16
"""The session key every test client sends (one client per test: it owns its sessions)."""


@pytest.fixture(scope="module")
def engine(tiny_model):
    from agentgym.llm.engine import LocalEngine

    engine = LocalEngine(tiny_model, max_batch_size=4)
    yield engine
    engine.close()


@pytest.fixture
def gateway(engine, tmp_path):
    """A recording server over the tiny model; yields (client, recorder, base URL)."""
    from agentgym.llm.server import ServerThread, create_app

    recorder = Recorder(tmp_path / "rec.db", max_calls=3, policy_version="step-7")
    server = ServerThread(create_app(engine, "tiny", recorder=recorder))
    client = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0,
                           default_headers={"X-Session-Key": KEY})  # fmt: skip
    yield client, recorder, server.url
    server.stop()
    recorder.close()


def _turn(client, messages, user="s1", **kw):
    kw = dict(model="tiny", max_tokens=8, temperature=1.0, seed=3, logprobs=True) | kw
    return client.chat.completions.create(messages=messages, user=user, **kw)


def test_calls_record_the_engines_ids_and_continue_token_exactly(gateway, engine):
    client, recorder, _ = gateway
    r1 = _turn(client, [SYSTEM, FIRST])
    reply = {"role": "assistant", "content": r1.choices[0].message.content}
    r2 = _turn(client, [SYSTEM, FIRST, reply, {"role": "user", "content": "Too old."}], seed=4)
    first, second = recorder.calls("s1")
    assert (first.seq, second.seq, first.policy_version) == (0, 1, "step-7")
    assert first.prompt_ids == engine.render([SYSTEM, FIRST], None)
    # the engine's own output for that prompt and seed: same ids, same logprobs (EOS kept)
    again = engine.generate(
        first.prompt_ids, SamplingSpec(max_tokens=8, temperature=1.0), seed=3, keep_eos=True
    )
    assert first.completion_ids == again.token_ids and first.logprobs == again.logprobs
    assert first.finish_reason == r1.choices[0].finish_reason
    shown = [t.logprob for t in r1.choices[0].logprobs.content]
    assert shown == pytest.approx(first.logprobs[: len(shown)], abs=1e-6)
    # the second prompt reads the sampled ids themselves, then the new turn's ids
    head = first.prompt_ids + first.completion_ids
    assert second.parent == first.id and second.prompt_ids[: len(head)] == head
    assert second.messages[-1]["content"] == "Too old."
    assert r2.choices[0].message.content == second.text


def test_an_edited_history_is_rendered_afresh(gateway, engine):
    client, recorder, _ = gateway
    r1 = _turn(client, [SYSTEM, FIRST])
    edited = {"role": "assistant", "content": "[cut] " + r1.choices[0].message.content}
    messages = [SYSTEM, FIRST, edited, {"role": "user", "content": "And?"}]
    _turn(client, messages)
    _, second = recorder.calls("s1")
    assert second.parent is None and second.prompt_ids == engine.render(messages, None)


def test_the_session_header_names_a_session_too(gateway):
    client, recorder, url = gateway
    body = {"model": "tiny", "messages": [FIRST], "max_tokens": 3}
    headers = {"X-Session-Id": "h1", "X-Session-Key": KEY}
    r = httpx.post(f"{url}/chat/completions", json=body, headers=headers)
    assert r.status_code == 200 and len(recorder.calls("h1")) == 1
    r = httpx.post(f"{url}/chat/completions", json=body | {"user": "other"}, headers=headers)
    assert r.status_code == 400 and "two sessions" in r.json()["error"]["message"]


def test_bad_sessions_get_clear_errors_and_keep_what_was_recorded(gateway):
    client, recorder, _ = gateway
    with pytest.raises(openai.BadRequestError, match="'user' field"):
        client.chat.completions.create(model="tiny", messages=[FIRST], max_tokens=3)
    for _ in range(3):
        _turn(client, [FIRST])
    with pytest.raises(openai.RateLimitError, match="over its limit of 3 calls"):
        _turn(client, [FIRST])
    assert [c.seq for c in recorder.calls("s1")] == [0, 1, 2]
    with pytest.raises(openai.BadRequestError, match="session id"):
        _turn(client, [FIRST], user="x" * 500)


def test_an_unknown_session_is_refused_where_sessions_are_opened_by_the_trainer(engine, tmp_path):
    from agentgym.llm.server import ServerThread, create_app

    recorder = Recorder(tmp_path / "rec.db", open_sessions=False)
    recorder.open("ep-1", KEY)
    server = ServerThread(create_app(engine, "tiny", recorder=recorder))
    try:
        client = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0,
                               default_headers={"X-Session-Key": KEY})  # fmt: skip
        _turn(client, [FIRST], user="ep-1")
        with pytest.raises(openai.NotFoundError, match="unknown session 'ep-2'"):
            _turn(client, [FIRST], user="ep-2")
        assert len(recorder.calls("ep-1")) == 1 and recorder.calls("ep-2") == []
    finally:
        server.stop()
        recorder.close()


def test_a_client_that_disconnects_leaves_no_call_and_loses_none(gateway):
    client, recorder, url = gateway
    _turn(client, [FIRST])
    body = {"model": "tiny", "messages": [FIRST], "max_tokens": 3000, "user": "s1",
            "temperature": 1.0, "n": 4}  # fmt: skip
    with pytest.raises(httpx.TimeoutException):
        httpx.post(f"{url}/chat/completions", json=body, timeout=0.3,
                   headers={"X-Session-Key": KEY})  # fmt: skip
    deadline = time.monotonic() + 20
    while recorder._sessions["s1"].inflight and time.monotonic() < deadline:
        time.sleep(0.05)
    assert recorder._sessions["s1"].inflight == 0
    _turn(client, [FIRST])
    assert [c.seq for c in recorder.calls("s1")] == [0, 1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_killed_server_keeps_every_answered_call(tiny_model, tmp_path):
    db, port = tmp_path / "rec.db", _free_port()
    cmd = [sys.executable, "-m", "agentgym.cli", "serve", str(tiny_model), "--port", str(port),
           "--record", str(db), "--name", "tiny"]  # fmt: skip
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0,
                               default_headers={"X-Session-Key": KEY})  # fmt: skip
        deadline = time.monotonic() + 120
        while True:
            try:
                client.models.list()
                break
            except openai.APIConnectionError:
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
                assert time.monotonic() < deadline
                time.sleep(0.2)
        answers = [_turn(client, [FIRST], user="k", seed=i).choices[0] for i in range(3)]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    calls = read_calls(db, "k")
    assert [c.text for c in calls] == [a.message.content for a in answers]
