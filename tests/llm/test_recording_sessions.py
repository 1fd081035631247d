"""Recording sessions belong to their client, their memory lives in the file, and one file has one
recording server: real `openai` clients, the real engine, two real `serve --record` processes."""

from __future__ import annotations

import gc
import json
import os
import socket
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import openai
import pytest

import agentgym.llm.recording as recording
from agentgym.llm.recording import Recorder
from agentgym.llm.sampling import SamplingSpec

ROOT = Path(__file__).resolve().parents[2]
FIRST = {"role": "user", "content": "The user wants one of these 8 movies: " + "Heat, " * 300}


@pytest.fixture(scope="module")
def engine(tiny_model):
    from agentgym.llm.engine import LocalEngine

    engine = LocalEngine(tiny_model, max_batch_size=4)
    yield engine
    engine.close()


def _client(url: str, key: str | None) -> openai.OpenAI:
    headers = {"X-Session-Key": key} if key else {}
    return openai.OpenAI(base_url=url, api_key="x", max_retries=0, default_headers=headers)


def _ask(client: openai.OpenAI, session: str) -> str:
    r = client.chat.completions.create(model="tiny", messages=[FIRST], user=session, max_tokens=3)
    return r.choices[0].message.content or ""


def test_a_session_takes_calls_only_from_the_client_that_opened_it(engine, tmp_path):
    from agentgym.llm.server import ServerThread, create_app

    recorder = Recorder(tmp_path / "rec.db")
    server = ServerThread(create_app(engine, "tiny", recorder=recorder))
    try:
        owner, intruder = _client(server.url, "a" * 20), _client(server.url, "b" * 20)
        _ask(owner, "tenant")
        with pytest.raises(openai.PermissionDeniedError, match="not session 'tenant'"):
            _ask(intruder, "tenant")
        with pytest.raises(openai.AuthenticationError, match="X-Session-Key header"):
            _ask(_client(server.url, None), "tenant")
        with pytest.raises(openai.BadRequestError, match="X-Session-Key: use 16 to 200"):
            _ask(_client(server.url, "short"), "new-one")
        _ask(owner, "tenant")
        assert [c.seq for c in recorder.calls("tenant")] == [0, 1]
        assert recorder.sessions() == ["tenant"]
    finally:
        server.stop()
        recorder.close()


def _call(recorder: Recorder, engine, session: str, messages: list) -> recording.Call:
    plan = recorder.plan(session, "k" * 16, messages, None, engine.tokenizer)
    ids = json.loads(json.dumps(plan.prompt_ids))  # the engine's prefix cache keeps its own copy
    gen = engine.generate(ids, SamplingSpec(max_tokens=4), seed=1, keep_eos=True)
    (call_id,) = recorder.record(plan, messages, None, [gen], engine.tokenizer)
    return next(c for c in recorder.calls(session) if c.id == call_id)


def _chat(recorder: Recorder, engine, session: str, turns: int) -> list[recording.Call]:
    messages, calls = [FIRST], []
    for t in range(turns):
        calls.append(_call(recorder, engine, session, messages))
        messages = [*messages, {"role": "assistant", "content": calls[-1].text},
                    {"role": "user", "content": f"Not that one ({t})."}]  # fmt: skip
    return calls


def test_continuation_is_read_from_the_file_and_no_call_stays_in_memory(engine, tmp_path):
    recorder = Recorder(tmp_path / "rec.db")
    only = [tracemalloc.Filter(True, recording.__file__, all_frames=True)]
    tracemalloc.start(25)
    try:
        recorder.open("warm-up", "k" * 16)  # the chat template compiles once
        _chat(recorder, engine, "warm-up", 2)
        gc.collect()
        before = tracemalloc.take_snapshot().filter_traces(only)
        for s in range(3):
            recorder.open(f"s{s}", "k" * 16)
            calls = _chat(recorder, engine, f"s{s}", 4)
            assert all(c.parent == p.id for p, c in zip(calls, calls[1:], strict=False))
        del calls  # what this test read back; the recorder must hold none of it
        gc.collect()
        after = tracemalloc.take_snapshot().filter_traces(only)
        held = sum(d.size_diff for d in after.compare_to(before, "filename"))
    finally:
        tracemalloc.stop()
    assert held < 16 * 1024, f"{held} bytes of 12 calls' texts and ids kept in memory"
    recorder.close()
    again = Recorder(tmp_path / "rec.db")  # a restarted server continues from the file alone
    try:
        first = again.calls("s0")[0]
        follow = [FIRST, {"role": "assistant", "content": first.text},
                  {"role": "user", "content": "Older."}]  # fmt: skip
        later = _call(again, engine, "s0", follow)
        assert later.parent == first.id and later.seq == 4
        assert later.prompt_ids[: len(first.prompt_ids)] == first.prompt_ids
    finally:
        again.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(tiny_model, db: Path, port: int) -> list[str]:
    return [sys.executable, "-m", "agentgym.cli", "serve", str(tiny_model), "--port", str(port),
            "--record", str(db), "--name", "tiny", "--session-max-calls", "5"]  # fmt: skip


def test_a_second_server_refuses_a_file_another_records(tiny_model, tmp_path):
    db, port = tmp_path / "rec.db", _free_port()
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    first = subprocess.Popen(_serve(tiny_model, db, port), cwd=ROOT, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        client = _client(f"http://127.0.0.1:{port}/v1", "k" * 16)
        deadline = time.monotonic() + 120
        while True:
            try:
                client.models.list()
                break
            except openai.APIConnectionError:
                assert first.poll() is None, first.stderr.read().decode()[-2000:]
                assert time.monotonic() < deadline
                time.sleep(0.2)
        second = subprocess.run(_serve(tiny_model, db, _free_port()), cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=120)  # fmt: skip
        assert second.returncode == 2
        assert f"error: {db} is being recorded by another process" in " ".join(
            second.stderr.split()
        )
        for _ in range(5):
            _ask(client, "one")
        with pytest.raises(openai.RateLimitError):
            _ask(client, "one")
    finally:
        first.kill()
        first.wait(timeout=30)
    assert [c.seq for c in recording.read_calls(db, "one")] == [0, 1, 2, 3, 4]
