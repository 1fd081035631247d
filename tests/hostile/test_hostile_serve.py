"""`agentgym serve` against huge and odd requests.

Each probe got a 500, a FastAPI-shaped error, a repeated sample, or held the event loop, before
the fix. The tiny model keeps them fast; nothing here is timed.
"""

from __future__ import annotations

import json

import httpx
import pytest

from agentgym.llm.server import choice_seed

MESSAGES = [{"role": "user", "content": "hello"}]


def _chat(served: str, **body) -> httpx.Response:
    return httpx.post(
        f"{served}/chat/completions", json={"messages": MESSAGES, **body}, timeout=120
    )


def _is_openai_error(response: httpx.Response) -> dict:
    body = response.json()
    assert set(body) == {"error"} and {"message", "type"} <= set(body["error"]), body
    return body["error"]


def test_tiny_temperature_with_logprobs_is_not_a_500(served):
    r = _chat(served, temperature=5e-324, logprobs=True, max_tokens=4)
    assert r.status_code == 200, r.text
    greedy = _chat(served, temperature=0, logprobs=True, max_tokens=4).json()
    assert r.json()["choices"][0]["message"] == greedy["choices"][0]["message"]
    assert all(
        isinstance(t["logprob"], float) for t in r.json()["choices"][0]["logprobs"]["content"]
    )


def test_lone_surrogate_in_model_is_a_404(served):
    r = httpx.post(
        f"{served}/chat/completions",
        content=b'{"model": "\\ud800", "messages": [{"role": "user", "content": "hi"}]}',
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 404 and "\\ud800" in _is_openai_error(r)["message"]


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"\xff\xfe", b"[]", b'"text"', b""],
)
def test_body_parse_errors_use_openai_error_objects(served, content):
    r = httpx.post(
        f"{served}/chat/completions", content=content, headers={"content-type": "application/json"}
    )
    assert 400 <= r.status_code < 500, r.text
    _is_openai_error(r)


def test_unknown_route_uses_openai_error_object(served):
    r = httpx.get(f"{served}/nothing-here")
    assert r.status_code == 404
    _is_openai_error(r)


def test_choice_seeds_do_not_collide_across_requests():
    assert choice_seed(None, 3) is None and choice_seed(7, 0) == 7
    seeds = {(s, i): choice_seed(s, i) for s in range(200) for i in range(8)}
    assert len(set(seeds.values())) == len(seeds)
    assert choice_seed(1, 1) != 2


def test_seed_1_with_n_2_does_not_repeat_seed_2(served):
    two = _chat(served, seed=1, n=2, max_tokens=12, temperature=1.0).json()["choices"]
    seed2 = _chat(served, seed=2, max_tokens=12, temperature=1.0).json()["choices"][0]
    first = _chat(served, seed=1, max_tokens=12, temperature=1.0).json()["choices"][0]
    assert two[0]["message"] == first["message"]  # choice 0 keeps the request's seed
    assert two[1]["message"] != seed2["message"]  # choice 1 used seed 1 + 1 = 2 before


def test_oversized_body_is_refused_before_it_is_read(served):
    huge = {"messages": [{"role": "user", "content": "x" * (9 * 2**20)}]}
    r = httpx.post(f"{served}/chat/completions", json=huge, timeout=120)
    assert r.status_code == 413 and "larger than" in _is_openai_error(r)["message"]


def test_oversized_streamed_body_is_refused_as_it_comes(served):
    """No Content-Length (chunked): 413 once the limit is passed (FastAPI turned the error it
    got while reading into a 400 "error parsing the body")."""
    body = json.dumps({"messages": [{"role": "user", "content": "x" * (9 * 2**20)}]}).encode()
    chunks = (body[i : i + 2**20] for i in range(0, len(body), 2**20))
    headers = {"content-type": "application/json"}
    r = httpx.post(f"{served}/chat/completions", content=chunks, headers=headers, timeout=120)
    assert r.status_code == 413 and "larger than" in _is_openai_error(r)["message"]


def test_prompt_that_cannot_fit_is_refused_without_tokenising(served):
    big = [{"role": "user", "content": "x" * (3 * 2**20)}]
    r = httpx.post(f"{served}/chat/completions", json={"messages": big}, timeout=120)
    assert r.status_code == 400 and "context" in _is_openai_error(r)["message"]
