"""An eval through a fault-injecting proxy (429, 500, timeouts, malformed JSON) loses nothing."""

import asyncio
import threading

import httpx
import pytest

import agentgym
from agentgym.chat_agent import ChatAgent, ChatAgentConfig
from agentgym.llm.clients import ClientOptions, OpenAIClient
from agentgym.llm.retry import RetryPolicy
from agentgym.testing import noop_suite

FAULTS = ["429", "500", "timeout", "badjson", "502", None, None, "429", None, "badjson"]


def fault_proxy(upstream: str):
    """A real HTTP server that forwards to `upstream` but answers some requests with a fault."""
    from fastapi import FastAPI, Request, Response

    app = FastAPI()
    schedule = list(FAULTS)
    lock = threading.Lock()
    app.state.injected = []

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        with lock:
            fault = schedule.pop(0) if schedule else None
        if fault:
            app.state.injected.append(fault)
        if fault in ("429", "500", "502"):
            headers = {"retry-after": "0"} if fault == "429" else {}
            return Response(
                status_code=int(fault),
                content='{"error": {"message": "injected"}}',
                headers=headers,
                media_type="application/json",
            )
        if fault == "timeout":
            await asyncio.sleep(4.0)  # past the client's 3 s timeout
        body = await request.body()
        async with httpx.AsyncClient(timeout=60) as http:
            up = await http.post(
                f"{upstream}/chat/completions",
                content=body,
                headers={"content-type": "application/json"},
            )
        content = up.content[: len(up.content) // 2] if fault == "badjson" else up.content
        return Response(status_code=up.status_code, content=content, media_type="application/json")

    return app


@pytest.fixture
def proxy(served):
    from agentgym.llm.server import ServerThread

    app = fault_proxy(served)
    server = ServerThread(app)
    yield server.url, app
    server.stop()


def _run(base_url: str, tmp_path, name: str):
    client = OpenAIClient(
        "tiny",
        ClientOptions(
            base_url=base_url,
            timeout_s=3.0,  # generous: a loaded 2-core machine must not add timeouts
            retry=RetryPolicy(initial_backoff_s=0.01, max_backoff_s=0.05),
        ),
    )
    config = ChatAgentConfig(max_tokens=8, max_format_errors=0)
    result = agentgym.evaluate(  # NoOp prompts are short: generation stays far below the timeout
        noop_suite(3, length=3),
        lambda env: ChatAgent(client, env, config),
        concurrency=3,
        db=tmp_path / name,
    )
    return client, result


def test_eval_survives_faults_and_matches_a_clean_run(proxy, served, tmp_path):
    url, app = proxy
    faulty_client, faulty = _run(url, tmp_path, "faulty.db")
    _, clean = _run(served, tmp_path, "clean.db")
    rows = faulty.episode_rows()
    assert len(rows) == 3 and all(r["status"] != "error" for r in rows), [r["error"] for r in rows]
    assert sorted(app.state.injected) == sorted(f for f in FAULTS if f)
    # every fault was retried (a slow upstream on a loaded machine may add a timeout or two)
    assert faulty_client.retries >= len(app.state.injected)

    def actions(result):
        return {
            e.task_id: [s.action for s in e.steps] for e in result.store.episodes(result.run_id)
        }

    assert actions(faulty) == actions(clean)  # greedy decoding: the faults changed nothing


def test_non_retryable_errors_become_episode_errors(served, tmp_path):
    client = OpenAIClient("tiny", ClientOptions(base_url=served.replace("/v1", "/nope")))
    suite = agentgym.TaskSuite.load("clarify/test").filter(limit=1)
    result = agentgym.evaluate(suite, lambda env: ChatAgent(client, env), db=tmp_path / "e.db")
    row = result.episode_rows()[0]
    assert row["status"] == "error" and "NotFoundError" in row["error"] and client.retries == 0
