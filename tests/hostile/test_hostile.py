"""Hostile-input probes: the serve abuse set over the tiny model.

Each probe is one an attacker or an unlucky user sent; each failed on the code before the fix.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest

import agentgym
from agentgym.llm.engine import LocalEngine
from agentgym.llm.sampling import SamplingSpec
from agentgym.llm.server import ServerThread, create_app
from agentgym.rollout import rollout
from agentgym.sandbox.local import bwrap_works
from agentgym.sandbox.testing import started_pool
from agentgym.task import TaskSuite

SWE_TASKS = Path(__file__).resolve().parents[2] / "tasks" / "swe" / "humanevalfix.jsonl"
MESSAGES = [{"role": "user", "content": "The user wants one of these 8 movies."}]
LONG = 200_000
"""More tokens than the long-context model generates in minutes: a request that must be stopped."""


@pytest.fixture
def client(served):
    return openai.OpenAI(base_url=served, api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def long_model(tiny_model, tmp_path_factory):
    """The tiny model with a 1M-token context, so one request can ask for minutes of tokens."""
    folder = tmp_path_factory.mktemp("long") / "long"
    shutil.copytree(tiny_model, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"max_position_embeddings": 10**6}))
    return folder


def _post(url: str, body: dict, timeout: float = 120) -> httpx.Response:
    return httpx.post(f"{url}/chat/completions", json=body, timeout=timeout)


# ---------------------------------------------------------------------------- validation
def test_max_tokens_beyond_the_context_is_a_400_naming_the_limit(client, tiny_model):
    with pytest.raises(openai.BadRequestError, match=r"max_tokens: 1000000000 is too many.*4096"):
        client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=10**9)
    huge = [{"role": "user", "content": "movie " * 5000}]
    with pytest.raises(openai.BadRequestError, match="the prompt is .* tokens; .* context is 4096"):
        client.chat.completions.create(model="tiny", messages=huge)


def test_an_unknown_model_is_a_404(client):
    with pytest.raises(openai.NotFoundError, match="'gpt-4o' does not exist.*serves 'tiny'"):
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES, max_tokens=2)


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ([{"role": "wizard", "content": "hi"}], "messages.0.role"),
        ([{"role": "user", "content": None}], "needs a string content"),
        ([{}], "messages.0.role"),
        ([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}], "messages.0"),
    ],
)
def test_bad_messages_are_a_400(served, messages, field):
    r = _post(served, {"model": "tiny", "messages": messages, "max_tokens": 2})
    assert r.status_code == 400 and field in r.json()["error"]["message"]


def test_text_content_parts_are_read(client):
    parts = [{"role": "user", "content": [{"type": "text", "text": MESSAGES[0]["content"]}]}]
    a = client.chat.completions.create(model="tiny", messages=parts, max_tokens=5, temperature=0)
    b = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=5, temperature=0)
    assert a.choices[0].message.content == b.choices[0].message.content


def test_a_bad_seed_fails_alone_and_its_batch_mates_succeed(served):
    good = {"model": "tiny", "messages": MESSAGES, "max_tokens": 4, "temperature": 1, "seed": 3}
    bodies = [good] * 8 + [good | {"seed": 10**20}, good | {"seed": 2**64}]  # JSON integers
    with ThreadPoolExecutor(len(bodies)) as pool:
        codes = [r.status_code for r in pool.map(lambda b: _post(served, b), bodies)]
    assert codes == [200] * 8 + [400, 400]


# ---------------------------------------------------------------------------- batch isolation
def _prompt(engine: LocalEngine, i: int) -> list[int]:
    return engine.render([{"role": "user", "content": f"Question {i}: is it a comedy?"}], None)


def test_a_seeded_request_samples_the_same_alone_or_in_any_batch(tiny_model):
    engine = LocalEngine(tiny_model, max_batch_size=3, prefix_cache_mb=0)
    try:  # generate_batch before any submit: no engine thread, so the batch is exactly these rows
        kw = dict(sampling=SamplingSpec(max_tokens=12, temperature=1.0))
        [alone] = engine.generate_batch([_prompt(engine, 1)], seeds=[5], **kw)
        first = len(engine.batch_sizes)
        prompts = [_prompt(engine, i) for i in (0, 1, 3)]
        together = engine.generate_batch(prompts, seeds=[90, 5, 77], **kw)
        assert engine.batch_sizes[first] == 3  # the seeded request rode second of three
        assert together[1].text == alone.text and together[1].token_ids == alone.token_ids
    finally:
        engine.close()


def test_a_request_that_fails_in_a_batch_fails_alone(tiny_model):
    engine = LocalEngine(tiny_model, max_batch_size=3, prefix_cache_mb=0)
    try:
        good = [engine.submit(_prompt(engine, i), SamplingSpec(max_tokens=3)) for i in range(2)]
        bad = engine.submit([10**6], SamplingSpec(max_tokens=3))  # no such token: the model raises
        assert all(len(f.result().token_ids) > 0 for f in good)
        with pytest.raises(IndexError):
            bad.result()
    finally:
        engine.close()


# ---------------------------------------------------------------------------- stopping
@pytest.fixture
def long_server(long_model):
    engine = LocalEngine(long_model, prefix_cache_mb=0)
    servers: list[ServerThread] = []

    def start(**kwargs) -> str:
        servers.append(ServerThread(create_app(engine, "long", **kwargs)))
        return servers[-1].url

    yield engine, start
    for server in servers:
        server.stop()
    engine.cancel_all()
    engine.close()


def test_a_client_that_disconnects_stops_its_generation(long_server):
    engine, start = long_server
    url = start()
    with pytest.raises(httpx.ReadTimeout):
        _post(url, {"messages": MESSAGES, "max_tokens": LONG, "temperature": 0}, timeout=2)
    for _ in range(600):  # the generation alone would take minutes
        if engine.stats.abandoned:
            break
        time.sleep(0.1)
    assert engine.stats.abandoned == 1
    r = _post(url, {"messages": MESSAGES, "max_tokens": 3})
    assert r.status_code == 200 and engine.stats.completion_tokens < LONG


def test_a_request_past_its_deadline_is_a_504(long_server):
    engine, start = long_server
    url = start(request_timeout_s=1.0)
    r = _post(url, {"messages": MESSAGES, "max_tokens": LONG, "temperature": 0})
    assert r.status_code == 504 and "deadline of 1 s" in r.json()["error"]["message"]
    assert engine.stats.completion_tokens < LONG


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sigterm_fails_the_request_in_flight_and_exits(long_model):
    port = _free_port()
    command = [sys.executable, "-m", "agentgym.cli", "serve", str(long_model), "--port", str(port)]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(1200):
            try:
                if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        answer: list[httpx.Response] = []
        body = {"messages": MESSAGES, "max_tokens": LONG, "temperature": 0}
        thread = threading.Thread(target=lambda: answer.append(_post(url, body, timeout=600)))
        thread.start()
        time.sleep(1.0)  # the request is in the engine by then
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)  # before the fix, uvicorn waited minutes for the generation
        thread.join(timeout=60)
        assert answer and answer[0].status_code == 503
        assert "shutting down" in answer[0].json()["error"]["message"]
    finally:
        proc.kill()
        proc.wait()


# ---------------------------------------------------------------------------- hard time limits
class _HangThenExpert:
    """Sends ``sleep 600`` on the task named ``hang`` (a real shell command the Swe env runs, with
    a 600 s command timeout), the env's expert actions on the others."""

    def __init__(self, env) -> None:
        self.env = env

    def reset(self, info) -> None:
        self.hang = info["task_id"] == "hang"

    def act(self, observation, info) -> str:
        return "```bash\nsleep 600\n```" if self.hang else self.env.unwrapped.expert_action()


@pytest.mark.slow
@pytest.mark.skipif(not bwrap_works(), reason="the Swe env runs in the bubblewrap sandbox")
def test_a_hanging_env_step_ends_the_episode_as_limit_and_the_env_is_rebuilt(tmp_path):
    suite = TaskSuite.load(SWE_TASKS)
    first = suite.tasks[0]
    hang = first.model_copy(
        update={"id": "hang", "config": first.config | {"command_timeout": 600}}
    )
    two = TaskSuite(name="hostile/swe", tasks=[hang, suite.tasks[1]])
    result = agentgym.evaluate(
        two,
        _HangThenExpert,
        time_limit_s=30,  # a fresh env's expert episode takes 3-8 s on a loaded 2-core machine
        db=tmp_path / "r.db",
        env_options={"sandbox": "local"},
    )
    rows = {r["task_id"]: r for r in result.episode_rows()}
    assert rows["hang"]["status"] == "limit" and rows["hang"]["steps"] == 0
    assert "during env.step, which was abandoned" in rows["hang"]["error"]
    assert rows[suite.tasks[1].id]["success"]  # on a fresh env: the first still runs `sleep`


def test_a_hanging_agent_call_ends_the_episode_as_limit():
    release = threading.Event()

    class Stuck:
        def reset(self, info) -> None:
            pass

        def act(self, observation, info) -> str:
            release.wait()  # never set before the episode returns
            return "noop"

    abandoned: list[bool] = []
    env = agentgym.make("agentgym/Clarify-v0")
    env.reset(seed=0)  # loads the suite: the episode's own reset then fits the limit on a busy CPU
    try:
        ep = rollout(env, Stuck(), time_limit_s=2.0, on_abandon=lambda: abandoned.append(True))
        assert ep.status == "limit" and "during agent.act" in ep.error and abandoned == [True]
    finally:
        release.set()
        env.close()


# ---------------------------------------------------------------------------- sandbox leaks
WRITABLE = (  # folders where a file can be created (devpts passes -writable, refuses files)
    "find / \\( -path /proc -o -path /sys \\) -prune -o -writable -type d -print 2>/dev/null |"
    ' while read d; do touch "$d/.probe" 2>/dev/null && rm "$d/.probe" && echo "$d"; done'
)
LEAVE = (
    "for d in /work /tmp /dev/shm; do echo secret > $d/leak; done; touch /dev/mqueue/leak; "
    "ipcmk -M 4096 >/dev/null; ipcs -m | grep -c '^0x'"
)
LOOK = "ls -A /work /tmp /dev/shm /dev/mqueue | grep -c leak; ipcs -m | grep -c '^0x'"


@pytest.mark.parametrize("provider", ["docker", "local"])
def test_a_reset_clears_every_writable_place_and_dev_shm_is_capped(provider):
    with started_pool(provider) as pool:
        with pool.acquire() as first:
            writable = first.exec(["sh", "-c", WRITABLE]).stdout.split()
            assert set(writable) <= {"/work", "/tmp", "/dev/shm", "/dev/mqueue"}, writable
            assert first.exec(["sh", "-c", "touch /dev/x"]).returncode != 0  # /dev is read-only
            fill = first.exec(["sh", "-c", "head -c 40000000 /dev/zero > /dev/shm/fill"])
            assert fill.returncode != 0 and "No space left" in fill.stderr  # 16m, not the host's
            assert first.exec(["sh", "-c", LEAVE]).stdout.split() == ["1"]
            handle = first._inner.handle
        # The release resets the sandbox in the background (about 0.5 s for bubblewrap, longer on a
        # busy machine); an acquire before that finishes would start a fresh sandbox instead. Wait
        # for the reset, then the pool hands out the same sandbox, with nothing left behind.
        _wait_until_idle(pool, 1)
        with pool.acquire() as second:
            assert second._inner.handle == handle
            assert second.exec(["sh", "-c", LOOK]).stdout.split() == ["0", "0"]


def _wait_until_idle(pool, n: int, timeout_s: float = 120.0) -> None:
    """Until ``n`` sandboxes are ready (the background reset finished); a wait, not a speed test."""
    deadline = time.monotonic() + timeout_s
    while pool.idle() < n:
        assert time.monotonic() < deadline, f"the pool's reset did not finish in {timeout_s} s"
        time.sleep(0.05)


@pytest.mark.parametrize("provider", ["docker", "local"])
def test_write_file_streams_and_a_file_past_the_cap_is_a_clear_error(provider):
    with started_pool(provider) as pool, pool.acquire() as box:
        box.write_file("big", b"x" * (200 << 20))  # one message of it OOM-killed docker (1 GB)
        assert box.exec(["stat", "-c", "%s", "big"]).stdout.strip() == str(200 << 20)
        with pytest.raises(OSError, match=r"do not fit; \d+ bytes are free.*size-capped tmpfs"):
            box.write_file("more", b"y" * (100 << 20))
        assert box.exec(["ls"]).stdout.split() == ["big"]  # nothing half-written; still alive


def test_the_reaper_removes_local_folders_of_owners_killed_with_9(tmp_path):
    if not bwrap_works():
        pytest.skip("bubblewrap is not usable here")
    from agentgym.sandbox.local import LocalProvider

    script = (
        "import sys, time\nfrom agentgym.sandbox.local import LocalProvider\n"
        "a, b = LocalProvider(), LocalProvider()\nprint(a._etc, b._etc, flush=True)\n"
        "time.sleep(600)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    folders = [Path(p) for p in child.stdout.readline().split()]
    child.kill()  # SIGKILL: no atexit
    child.wait()
    assert len(folders) == 2 and all(f.is_dir() for f in folders)
    mine = LocalProvider()  # a new provider reaps what dead owners left
    try:
        assert not any(f.exists() for f in folders) and mine._etc.is_dir()
    finally:
        mine.close_all()


# ---------------------------------------------------------------------------- viewer
@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    db = tmp_path_factory.mktemp("store") / "runs.db"
    suite = TaskSuite.load("clarify/test").filter(limit=3)
    result = agentgym.evaluate(suite, "expert", db=db)
    result.store.close()
    return db, result.run_id


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/api/runs/{run}/episodes", {"page": 9223372036854775807}, "page"),
        ("/api/runs/{run}/episodes", {"min_steps": "1e23"}, "min_steps"),
        ("/api/runs/{run}/episodes", {"max_steps": 2**70}, "max_steps"),
        ("/api/episode", {"run": "{run}", "task": "t", "sample": "1e20"}, "sample"),
        ("/api/compare", {"a": "{run}", "b": "{run}", "page": 10**19}, "page"),
    ],
)
def test_the_viewer_answers_huge_numbers_with_a_400(small_store, path, params, field):
    from agentgym.viewer.server import ViewerThread

    db, run = small_store
    with ViewerThread(db) as viewer:
        params = {k: str(v).replace("{run}", run) for k, v in params.items()}
        r = httpx.get(viewer.url + path.replace("{run}", run).lstrip("/"), params=params)
    assert r.status_code == 400 and r.json()["detail"].startswith(field)


def test_the_viewer_refuses_other_host_names(small_store):
    from agentgym.viewer.server import ViewerThread

    db, _ = small_store
    with ViewerThread(db) as viewer:
        port = viewer.url.rsplit(":", 1)[1].rstrip("/")
        names = {n: f"{n}:{port}" for n in ("evil.example", "127.0.0.1", "localhost", "[::1]")}
        codes = {
            n: httpx.get(viewer.url + "api/runs", headers={"Host": h}).status_code
            for n, h in names.items()
        }
    assert codes == {"evil.example": 400, "127.0.0.1": 200, "localhost": 200, "[::1]": 200}


# ---------------------------------------------------------------------------- CLI errors
def _cli(*args: str, cwd: Path, wrap: list[str] | None = None) -> subprocess.CompletedProcess:
    command = [*(wrap or []), sys.executable, "-m", "agentgym.cli", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


_PROGRESS = re.compile(r"^\S.*: \d+/(\d+|\?) \(\d+%\)")


def _one_line_error(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    # Off a terminal, eval prints plain progress lines ("expert: 1/200 (0%), ...") before it fails.
    lines = [line for line in r.stderr.splitlines() if line.strip() and not _PROGRESS.match(line)]
    assert len(lines) == 1 and lines[0].startswith("error:"), r.stderr
    assert all(w in lines[0] for w in words), lines[0]


def _read_only(folder: Path) -> list[str]:
    """Run a command with ``folder`` mounted read-only (tests run as root: chmod would not do)."""
    root = ["bwrap", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    return [*root, "--ro-bind", str(folder), str(folder), "--chdir", str(folder)]


@pytest.mark.skipif(not bwrap_works(), reason="read-only and full folders come from bubblewrap")
def test_a_read_only_store_is_read_by_report_view_and_export_and_refused_by_eval(small_store):
    db, run = small_store
    wrap = _read_only(db.parent)
    report = _cli("report", db.name, "--json", cwd=db.parent, wrap=wrap)
    assert report.returncode == 0 and json.loads(report.stdout)[0]["run"] == run
    export = _cli("export", db.name, cwd=db.parent, wrap=wrap)
    assert export.returncode == 0 and len(export.stdout.splitlines()) == 3
    viewer = "from agentgym.viewer.db import StoreReader; print(StoreReader('runs.db').version())"
    view = subprocess.run([*wrap, sys.executable, "-c", viewer], capture_output=True, text=True)
    assert view.returncode == 0, view.stderr
    ev = _cli("eval", "clarify/test", "-a", "random", "--limit", "1", "--db", db.name,
              cwd=db.parent, wrap=wrap)  # fmt: skip
    _one_line_error(ev, "cannot open runs.db for writing", "writable")


@pytest.mark.skipif(not bwrap_works(), reason="read-only and full folders come from bubblewrap")
def test_a_full_disk_during_eval_is_one_line(tmp_path):
    full = ["bwrap", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    full += ["--size", "200000", "--tmpfs", str(tmp_path), "--chdir", str(tmp_path)]
    r = _cli("eval", "clarify/test", "-a", "expert", "--db", "x.db", cwd=tmp_path, wrap=full)
    _one_line_error(r, "x.db", "disk is full")


def test_random_bytes_are_not_a_store(tmp_path):
    (tmp_path / "noise.db").write_bytes(bytes(range(256)) * 40)
    _one_line_error(_cli("report", "noise.db", cwd=tmp_path), "noise.db", "not a database")
    r = _cli("eval", "clarify/test", "-a", "expert", "--limit", "1", "--db", "noise.db",
             cwd=tmp_path)  # fmt: skip
    _one_line_error(r, "noise.db", "not a database")


def test_tasks_validate_names_deep_and_undecodable_rows_and_the_others(tmp_path):
    good = (
        (Path(agentgym.__file__).parents[1] / "tasks" / "clarify" / "test.jsonl").open().readline()
    )
    rows = [good.encode(), b"[" * 100_000 + b"\n", b'{"id": "x\xff"}\n', b'{"id": 3}\n']
    (tmp_path / "bad.jsonl").write_bytes(b"".join(rows))
    r = _cli("tasks", "validate", "bad.jsonl", cwd=tmp_path)
    assert "Traceback" not in r.stderr and r.returncode != 0
    out = r.stdout + r.stderr
    assert "bad.jsonl:2: <row>: not a task: JSON nested too deep" in out
    assert "bad.jsonl:3: <row>: not UTF-8: byte 0xff at column 10" in out
    assert "bad.jsonl:4: id: Input should be a valid string" in out


# ---------------------------------------------------------------------------- restore
@pytest.mark.parametrize("env_id", ["agentgym/Clarify-v0", "agentgym/Household-v0"])
def test_render_after_restore_shows_the_snapshot_observation(env_id):
    env = agentgym.make(env_id, render_mode="ansi")
    try:
        env.reset(seed=0)
        shown = env.step(env.unwrapped.expert_action())[0]
        snap = env.unwrapped.snapshot()
        after = env.step(env.unwrapped.expert_action())[0]
        assert after != shown
        env.unwrapped.restore(snap)
        assert env.render() == shown
    finally:
        env.close()
