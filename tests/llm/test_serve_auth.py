"""`agentgym serve` with an API key, a Host check and quiet disconnects: the real OpenAI client
against the real server on 127.0.0.1. Each probe failed on the code before its fix."""

from __future__ import annotations

import gc
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("fastapi")

KEY = "serve-key-0123456789"
HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def keyed(tiny_model) -> Iterator[object]:
    """The tiny model served in a thread with a key, as `agentgym serve --api-key` serves it."""
    from agentgym.hosts import allowed_hosts
    from agentgym.llm.engine import LocalEngine
    from agentgym.llm.server import ServerThread, create_app

    engine = LocalEngine(tiny_model)
    app = create_app(engine, "tiny", api_key=KEY, hosts=allowed_hosts("127.0.0.1"))
    server = ServerThread(app)
    yield server
    server.stop()
    engine.close()


def _client(url: str, key: str, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key=key, max_retries=0, **kw)


def test_the_key_is_checked_as_openai_clients_send_it(keyed):
    good = _client(keyed.url, KEY)
    assert [m.id for m in good.models.list()] == ["tiny"]
    reply = good.chat.completions.create(model="tiny", messages=HELLO, max_tokens=3)
    assert reply.choices[0].message.content is not None
    for wrong in ("nope", KEY + "x", KEY[:-1], f"Bearer {KEY}"):
        with pytest.raises(openai.AuthenticationError) as caught:
            _client(keyed.url, wrong).chat.completions.create(model="tiny", messages=HELLO)
        assert caught.value.status_code == 401 and wrong not in str(caught.value)
        with pytest.raises(openai.AuthenticationError):
            _client(keyed.url, wrong).models.list()
    missing = httpx.post(f"{keyed.url}/chat/completions", json={"messages": HELLO})
    assert missing.status_code == 401 and missing.json()["error"]["code"] == "invalid_api_key"
    assert missing.headers["www-authenticate"] == "Bearer"


def test_other_host_names_are_refused(keyed):
    port = keyed.url.split(":")[2].split("/")[0]
    auth = {"Authorization": f"Bearer {KEY}"}
    codes = {
        name: httpx.get(f"{keyed.url}/models", headers=auth | {"Host": f"{name}:{port}"})
        for name in ("evil.example", "127.0.0.1", "localhost", "[::1]")
    }
    assert {n: r.status_code for n, r in codes.items()} == {
        "evil.example": 400, "127.0.0.1": 200, "localhost": 200, "[::1]": 200}  # fmt: skip
    assert "evil.example" in codes["evil.example"].json()["error"]["message"]


def test_web_pages_of_other_sites_are_refused(keyed):
    """A browser names the page's site in ``Origin``: another site's page gets 403, even with
    the key (a page that learnt it); the server's own site and programs (no Origin) are served."""
    auth = {"Authorization": f"Bearer {KEY}"}
    site = keyed.url.removesuffix("/v1")
    for origin, status in [("http://evil.example", 403), ("null", 403), (site, 200)]:
        r = httpx.get(f"{keyed.url}/models", headers=auth | {"Origin": origin})
        assert r.status_code == status, origin
    assert (
        "evil.example"
        in httpx.get(
            f"{keyed.url}/models", headers=auth | {"Origin": "http://evil.example"}
        ).json()["error"]["message"]
    )


def test_a_client_disconnect_is_cancelled_quietly(keyed, caplog):
    """A client that gives up mid-generation: its request is cancelled, and asyncio logs no
    `_GatheringFuture exception was never retrieved` (logged once the future is collected)."""
    caplog.set_level(logging.ERROR, logger="asyncio")
    impatient = _client(keyed.url, KEY, timeout=0.05)
    gave_up = 0
    for _ in range(3):  # its 214-token answer takes about 0.8 s here: the client gives up first
        try:
            impatient.chat.completions.create(model="tiny", messages=HELLO, max_tokens=4000, seed=0)
        except openai.APITimeoutError:
            gave_up += 1
    assert gave_up, "no request outlived the client's 0.05 s timeout"
    deadline = time.monotonic() + 30
    while keyed.server.server_state.tasks and time.monotonic() < deadline:
        time.sleep(0.05)  # the request tasks end once they see the disconnect
    assert not keyed.server.server_state.tasks
    gc.collect()
    reply = _client(keyed.url, KEY).chat.completions.create(
        model="tiny", messages=HELLO, max_tokens=2
    )
    assert reply.choices  # the server serves on
    gc.collect()
    lost = [r.getMessage() for r in caplog.records if "never retrieved" in r.getMessage()]
    assert not lost, lost


def _cli_serve(*args: str, env: dict[str, str] | None = None, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "agentgym.cli", "serve", *args],
        env=os.environ | (env or {}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.7", "example.com"])
def test_a_public_host_without_a_key_is_refused_in_one_line(tiny_model, host):
    proc = _cli_serve(str(tiny_model), "--host", host, env={"AGENTGYM_API_KEY": ""})
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: --host {host} is reachable"), err
    assert "--api-key" in lines[0] and "AGENTGYM_API_KEY" in lines[0]


def test_the_cli_reads_the_key_from_the_environment(tiny_model):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = _cli_serve(str(tiny_model), "--port", str(port), env={"AGENTGYM_API_KEY": KEY})
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                status = httpx.get(f"{url}/models", timeout=2).status_code
                break
            except httpx.TransportError:
                time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()[1]
        assert status == 401
        assert [m.id for m in _client(url, KEY).models.list()] == [tiny_model.name]
        with pytest.raises(openai.AuthenticationError):
            _client(url, "wrong").models.list()
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
