"""The viewer's JSON API over a store made by real evals, checked against the store and metrics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

import agentgym  # noqa: E402
from agentgym.episode import Episode, Step, Usage  # noqa: E402
from agentgym.metrics import summarize_by_tag, wilson_interval  # noqa: E402
from agentgym.report import run_summaries  # noqa: E402
from agentgym.viewer import create_app  # noqa: E402
from agentgym.viewer.episode import command_output, dialogue, scores, tool_calls  # noqa: E402


def make_store(path: Path) -> dict[str, str]:
    """Real evals: the Clarify test suite with the expert and random agents, and the tau2 mock
    tool-use suite with the expert (tool calls). Returns run ids by short name."""
    runs = {}
    for key, suite, agent in [
        ("clarify_expert", "clarify/test", "expert"),
        ("clarify_random", "clarify/test", "random"),
        ("mock_expert", "tooluse/mock", "expert"),
    ]:
        result = agentgym.evaluate(suite, agent, db=path, concurrency=2, max_steps=20)
        runs[key] = result.run_id
        result.store.close()
    return runs


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("viewer") / "runs.db"
    runs = make_store(path)
    s = agentgym.Store(path)
    yield path, runs, s
    s.close()


@pytest.fixture(scope="module")
def client(store):
    with TestClient(create_app(store[0])) as c:
        yield c


def get(client: TestClient, url: str, **params):
    response = client.get(url, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_runs_match_the_report(client, store):
    _, runs, s = store
    listed = {r["id"]: r for r in get(client, "/api/runs")}
    assert set(listed) == set(runs.values())
    for run, sums in run_summaries(s):
        row, overall = listed[run["id"]], sums[0]
        assert row["episodes"] == overall.episodes and row["successes"] == overall.successes
        assert row["errors"] == overall.errors
        assert row["ci95"] == pytest.approx(list(overall.interval))
    assert listed[runs["clarify_expert"]]["success_rate"] == 1.0
    assert [r["suite"] for r in get(client, "/api/runs", q="MOCK")] == ["tooluse/mock"]


FILTERS = [
    ({}, lambda r: True),
    ({"success": "no"}, lambda r: not r["success"]),
    ({"success": "yes", "tag": "hard"}, lambda r: r["success"] and "hard" in r["tags"]),
    ({"status": "limit"}, lambda r: r["status"] == "limit"),
    ({"min_steps": 4, "max_steps": 6}, lambda r: 4 <= r["steps"] <= 6),
    ({"q": "MOVIES"}, lambda r: "movies" in (r["task_id"] + r["instruction"]).lower()),
    ({"q": "-0017"}, lambda r: r["task_id"].endswith("-0017")),
    ({"q": "%"}, lambda r: "%" in r["task_id"] + r["instruction"]),
    ({"q": "_"}, lambda r: "_" in r["task_id"] + r["instruction"]),
]


@pytest.mark.parametrize("params,keep", FILTERS, ids=[json.dumps(f[0]) for f in FILTERS])
def test_episode_filters_select_what_python_selects(client, store, params, keep):
    _, runs, s = store
    run_id = runs["clarify_random"]
    expected = [(r["task_id"], r["sample"]) for r in s.episode_rows(run_id) if keep(r)]
    page = get(client, f"/api/runs/{run_id}/episodes", page_size=500, **params)
    assert page["total"] == len(expected)
    assert [(r["task_id"], r["sample"]) for r in page["rows"]] == expected


def test_pages_cover_every_episode_once(client, store):
    _, runs, s = store
    run_id = runs["clarify_random"]
    first = get(client, f"/api/runs/{run_id}/episodes", page_size=7, success="no")
    seen = []
    for n in range(1, first["pages"] + 1):
        page = get(client, f"/api/runs/{run_id}/episodes", page_size=7, success="no", page=n)
        assert len(page["rows"]) <= 7
        seen += [r["task_id"] for r in page["rows"]]
    failed = [r["task_id"] for r in s.episode_rows(run_id) if not r["success"]]
    assert seen == failed and len(set(seen)) == len(seen) == first["total"]


def test_sort_by_steps_descending(client, store):
    run_id = store[1]["clarify_random"]
    rows = get(client, f"/api/runs/{run_id}/episodes", sort="steps", desc=True, page_size=500)[
        "rows"
    ]
    steps = [r["steps"] for r in rows]
    assert steps == sorted(steps, reverse=True) and len(set(steps)) > 1


def test_bad_filters_and_unknown_ids_say_what_is_wrong(client, store):
    run_id = store[1]["clarify_random"]
    bad = client.get(f"/api/runs/{run_id}/episodes", params={"success": "maybe"})
    assert bad.status_code == 400 and "'any', 'yes' or 'no'" in bad.text
    bad = client.get(f"/api/runs/{run_id}/episodes", params={"page_size": 10_000})
    assert bad.status_code == 400 and "page_size" in bad.text
    bad = client.get(f"/api/runs/{run_id}/episodes", params={"sort": "colour"})
    assert bad.status_code == 400 and "steps" in bad.text
    missing = client.get("/api/runs/nope/episodes")
    assert missing.status_code == 404 and "no run 'nope'" in missing.json()["detail"]
    gone = client.get("/api/episode", params={"run": run_id, "task": "nope", "sample": 0})
    assert gone.status_code == 404 and "no episode ('nope', sample 0)" in gone.json()["detail"]


def test_episode_page_is_the_stored_trajectory(client, store):
    _, runs, s = store
    run_id = runs["clarify_random"]
    stored = list(s.episodes(run_id))
    ep = stored[5]
    shown = get(client, "/api/episode", run=run_id, task=ep.task_id, sample=ep.sample)
    assert shown["instruction"] == ep.instruction and shown["success"] == ep.success
    assert [st["action"] for st in shown["steps"]] == [st.action for st in ep.steps]
    assert [st["observation"] for st in shown["steps"]] == [st.observation for st in ep.steps]
    assert [st["reward"] for st in shown["steps"]] == [st.reward for st in ep.steps]
    assert [st["info"] for st in shown["steps"]] == [st.info for st in ep.steps]
    assert shown["prev"]["task_id"] == stored[4].task_id
    assert shown["next"]["task_id"] == stored[6].task_id


def test_tool_calls_and_results_are_separated(client, store):
    _, runs, s = store
    run_id = runs["mock_expert"]
    ep = next(e for e in s.episodes(run_id) if e.steps and e.steps[0].action.startswith("{"))
    shown = get(client, "/api/episode", run=run_id, task=ep.task_id, sample=0)
    first = shown["steps"][0]
    call = json.loads(ep.steps[0].action)
    assert first["tool_calls"] == [{"name": call["name"], "arguments": call["arguments"]}]
    assert first["info"]["source"] == call["name"]
    assert first["observation_json"] == json.loads(ep.steps[0].observation)
    last = shown["steps"][-1]
    assert last["tool_calls"] is None  # the final message to the user is plain text
    assert last["scores"] == ep.steps[-1].info["reward_info"]["components"]


def test_compare_counts_match_the_episodes(client, store):
    _, runs, s = store
    a, b = runs["clarify_expert"], runs["clarify_random"]
    solved_b = {r["task_id"] for r in s.episode_rows(b) if r["success"]}
    res = get(client, "/api/compare", a=a, b=b, only="differ", page_size=500)
    assert res["counts"] == {
        "both": len(solved_b),
        "only_a": 200 - len(solved_b),
        "only_b": 0,
        "neither": 0,
        "missing": 0,
    }
    assert res["total"] == 200 - len(solved_b)
    assert {r["task_id"] for r in res["rows"]}.isdisjoint(solved_b)
    other = get(client, "/api/compare", a=a, b=runs["mock_expert"], only="missing", page_size=5)
    assert other["total"] == 210 and other["pages"] == 42 and len(other["rows"]) == 5


def test_tag_summaries_are_metrics_summaries(client, store):
    _, runs, s = store
    run_id = runs["clarify_random"]
    shown = get(client, f"/api/runs/{run_id}/summary")
    expected = summarize_by_tag(s.episode_rows(run_id))
    assert [g["group"] for g in shown] == [e.group for e in expected]
    for g, e in zip(shown, expected, strict=True):
        assert g["successes"] == e.successes and g["episodes"] == e.episodes
        assert g["ci95"] == pytest.approx(list(wilson_interval(e.successes, e.episodes)))
    assert get(client, f"/api/runs/{run_id}")["tags"] == sorted(
        {"movies", "products", "easy", "medium", "hard"}
    )


def test_version_changes_when_an_eval_writes(tmp_path):
    path = tmp_path / "live.db"
    agentgym.evaluate("tooluse/mock", "expert", db=path).store.close()
    with TestClient(create_app(path)) as c:
        before = get(c, "/api/version")["version"]
        assert get(c, "/api/version")["version"] == before  # reads change nothing
        agentgym.evaluate("tooluse/mock", "random", db=path).store.close()
        assert get(c, "/api/version")["version"] != before
        assert len(get(c, "/api/runs")) == 2


def test_training_curves_from_runs_at_training_steps(tmp_path):
    path = tmp_path / "train.db"
    suite = agentgym.TaskSuite.load("clarify/test").filter((), 20)
    for step, seed in [(200, 2), (0, 0), (100, 1)]:
        agentgym.evaluate(suite, "random", db=path, seed=seed, name=f"policy step-{step}")
    agentgym.evaluate(suite, "expert", db=path)  # not a training run
    with TestClient(create_app(path)) as c:
        curves = get(c, "/api/training")
    assert [c["label"] for c in curves] == ["policy step-* on clarify/test"]
    points = curves[0]["points"]
    assert [p["step"] for p in points] == [0, 100, 200]
    assert all(p["episodes"] == 20 for p in points)


def test_training_tokens_with_their_loss_mask(tmp_path):
    path = tmp_path / "rollouts.db"
    s = agentgym.Store(path)
    s.start_run("r1", "grpo rollouts", "clarify/train", "expert", {}, {}, None)
    usage = Usage(token_ids=[5, 6, 7, 8], loss_mask=[0, 0, 1, 1], logprobs=[-0.1, -0.2, -0.3, -0.4])
    step = Step(t=0, action="ask[year=1999]", observation="No.", reward=0.0, usage=usage)
    s.save_episode("r1", Episode(task_id="t", env_id="agentgym/Clarify-v0", steps=[step]))
    s.close()
    with TestClient(create_app(path)) as c:
        tokens = get(c, "/api/episode", run="r1", task="t", sample=0)["steps"][0]["tokens"]
    assert [t["mask"] for t in tokens] == [0, 0, 1, 1]
    assert [t["id"] for t in tokens] == [5, 6, 7, 8] and tokens[2]["logprob"] == -0.3
    assert tokens[0]["text"] is None  # no tokenizer for a scripted agent


def test_local_model_tokens_are_decoded(tmp_path, tiny_model):
    path = tmp_path / "hf.db"
    suite = agentgym.TaskSuite.load("clarify/test").filter((), 1)
    agentgym.evaluate(suite, f"hf:{tiny_model}?max_tokens=8", db=path, max_steps=2)
    with TestClient(create_app(path)) as c:
        run_id = get(c, "/api/runs")[0]["id"]
        task = get(c, f"/api/runs/{run_id}/episodes")["rows"][0]["task_id"]
        step = get(c, "/api/episode", run=run_id, task=task, sample=0)["steps"][0]
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    assert step["tokens"], "the hf agent records token ids"
    ids = [t["id"] for t in step["tokens"]]
    assert [t["text"] for t in step["tokens"]] == [tok.decode([i]) for i in ids]


def test_step_parts_from_other_envs():
    # envs/swe formats command results this way (SweEnv._run)
    assert command_output("<returncode>1</returncode>\n<output>\nE   assert 2 == 3\n</output>") == {
        "returncode": 1,
        "output": "E   assert 2 == 3\n",
    }
    assert command_output("plain text") is None
    said = dialogue({"messages": [{"speaker": "buyer", "content": "$10?"}, {"role": "seller"}]})
    assert said == [{"speaker": "buyer", "content": "$10?"}, {"speaker": "seller", "content": ""}]
    assert scores({"judge": {"scores": {"goal": 7, "believability": 9}, "reasoning": "..."}}) == {
        "goal": 7,
        "believability": 9,
    }
    parallel = '[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": 1}}]'
    assert [c["name"] for c in tool_calls(parallel) or []] == ["a", "b"]
    assert tool_calls('{"answer": 3}') is None and tool_calls("[]") is None


def test_opening_a_file_that_is_not_a_store(tmp_path):
    with pytest.raises(FileNotFoundError, match="no store at"):
        create_app(tmp_path / "missing.db")
    (tmp_path / "notes.txt").write_text("not sqlite " * 200)
    with pytest.raises(ValueError, match="not an SQLite store"):
        create_app(tmp_path / "notes.txt")
    other = tmp_path / "other.db"
    import sqlite3

    sqlite3.connect(other).execute("create table runs (id text)").connection.commit()
    with pytest.raises(ValueError, match="no table episodes, steps"):
        create_app(other)


def test_view_command_serves_the_store(store, tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentgym.cli", "view", str(store[0]), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("agentgym view: http://127.0.0.1:"), line
        url = line.split()[2]
        page = _get_when_up(url)
        assert "agentgym view" in page.text and "/static/js/main.js" in page.text
        assert len(httpx.get(url + "api/runs").json()) == 3
        assert (
            httpx.get(url + "static/js/main.js")
            .headers["content-type"]
            .startswith("text/javascript")
        )
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    bad = subprocess.run(
        [sys.executable, "-m", "agentgym.cli", "view", str(tmp_path / "none.db")],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "no store at" in bad.stderr


def _get_when_up(url: str) -> httpx.Response:
    deadline = time.monotonic() + 30
    while True:
        try:
            return httpx.get(url)
        except httpx.ConnectError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_status_counts_are_complete(client, store):
    run_id = store[1]["clarify_random"]
    statuses = Counter(r["status"] for r in store[2].episode_rows(run_id))
    for status, n in statuses.items():
        assert get(client, f"/api/runs/{run_id}/episodes", status=status)["total"] == n
