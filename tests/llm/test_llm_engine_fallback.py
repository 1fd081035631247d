"""FallbackEngine (the ``generate`` fallback): per-row stops, the prefix cache, the batch window."""

from __future__ import annotations

import threading

import pytest
import torch

from agentgym.llm.engine import FallbackEngine
from agentgym.llm.engine.fallback_cache import PrefixCache
from agentgym.llm.sampling import SamplingSpec

CHAT = [
    {"role": "system", "content": "You are looking for one of the candidate movies."},
    {"role": "user", "content": "The user wants one of these 8 movies. Ask yes/no questions."},
]


@pytest.fixture(scope="module")
def engine(tiny_model):
    """A queue-fed engine without a prefix cache: batches sample exactly alike, run after run."""
    return FallbackEngine(tiny_model, max_batch_size=3, max_wait_s=0.5, prefix_cache_mb=0)


def _batch(engine, prompts, each):
    """Submit together (one batch: the batch closes when full) and wait for all; ``each`` holds
    every row's sampling settings and ``seed``."""
    futures = [
        engine.submit(p, SamplingSpec(**kw), seed=seed)
        for p, (kw, seed) in zip(
            prompts, [(k, k.pop("seed", None)) for k in map(dict, each)], strict=True
        )
    ]
    return [f.result() for f in futures]


def _prompts(engine):
    return [
        engine.render(
            CHAT[:1] + [{"role": "user", "content": f"Question {i}: is it a comedy?"}], None
        )
        for i in range(3)
    ]


def test_each_row_stops_at_its_own_stop_string_and_the_batch_ends_early(engine):
    prompts = _prompts(engine)
    sampling = dict(max_tokens=24, temperature=1.0, seed=11)
    full = _batch(engine, prompts, [sampling] * 3)
    assert all(len(g.token_ids) == 24 and len(g.text) >= 5 for g in full)
    stops = [[g.text[3:5]] for g in full]  # a different stop per row, each early in its text
    steps_before = engine.stats.steps
    cut = _batch(engine, prompts, [sampling | {"stop": s} for s in stops])
    for g, whole, (stop,) in zip(cut, full, stops, strict=True):
        assert g.text == whole.text[: whole.text.find(stop)]
        assert g.finish_reason == "stop"
        assert g.token_ids == whole.token_ids[: len(g.token_ids)]
    assert engine.batch_sizes[-2:] == [3, 3]  # all three rows shared each batch
    assert engine.stats.steps - steps_before < 24  # generation ended when every row had stopped


def test_a_row_without_stop_strings_ends_at_its_own_token_limit(engine):
    prompts = _prompts(engine)
    sampling = dict(temperature=1.0, seed=5)
    full = _batch(engine, prompts, [sampling | {"max_tokens": 20}] * 3)
    each = [sampling | {"max_tokens": 20, "stop": [full[0].text[2:4]]}]
    each += [sampling | {"max_tokens": 6}, sampling | {"max_tokens": 4}]
    steps_before = engine.stats.steps
    out = _batch(engine, prompts, each)
    assert out[0].finish_reason == "stop"
    assert [len(g.token_ids) for g in out[1:]] == [6, 4]
    assert [g.finish_reason for g in out[1:]] == ["length", "length"]
    assert engine.stats.steps - steps_before < 20


def test_generate_batch_stops(engine):
    prompts = _prompts(engine)
    full = engine.generate_batch(prompts, SamplingSpec(max_tokens=16, temperature=1.0), seed=3)
    stop = full[0].text[1:3]
    out = engine.generate_batch(
        prompts, SamplingSpec(max_tokens=16, temperature=1.0, stop=[stop]), seed=3
    )
    for g, whole in zip(out, full, strict=True):
        expected = whole.text[: whole.text.find(stop)] if stop in whole.text else whole.text
        assert g.text == expected


def test_prefix_cache_reuses_the_previous_turn_and_changes_nothing(tiny_model):
    cached = FallbackEngine(tiny_model, prefix_cache_mb=64)
    plain = FallbackEngine(tiny_model, prefix_cache_mb=0)
    chat = [dict(m) for m in CHAT]
    chat[1]["content"] *= 4  # long enough to be prefilled on its own
    for _turn in range(3):
        prompt = cached.render(chat, None)
        a = cached.generate(prompt, SamplingSpec(max_tokens=8))
        b = plain.generate(prompt, SamplingSpec(max_tokens=8))
        assert a.token_ids == b.token_ids and a.text == b.text
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
        chat += [
            {"role": "assistant", "content": a.text},
            {"role": "user", "content": "No. Ask about the year."},
        ]
    assert cached.stats.prompt_tokens == plain.stats.prompt_tokens
    assert cached.stats.cached_tokens > cached.stats.prompt_tokens / 2
    assert cached.stats.prefill_tokens < plain.stats.prefill_tokens / 2
    assert len(cached.prefix_cache) == 1  # each turn's entry replaced the one it continued


def test_rows_still_going_continue_from_the_cache_in_a_smaller_batch(tiny_model):
    """Rounds of 4, 8, 16 steps: a row that stopped leaves; the others go on, unchanged."""
    cached = FallbackEngine(tiny_model, max_batch_size=3, max_wait_s=0.5, prefix_cache_mb=64)
    cached.chunk_tokens = 4
    plain = FallbackEngine(tiny_model, max_batch_size=3, max_wait_s=0.5, prefix_cache_mb=0)
    prompts = _prompts(plain)
    each = [{"max_tokens": 20, "stop": ["\n" * 5]}, {"max_tokens": 20}]
    each += [{"max_tokens": 11}]
    a, b = _batch(cached, prompts, each), _batch(plain, prompts, each)
    for x, y in zip(a, b, strict=True):
        assert (x.text, x.token_ids, x.finish_reason) == (y.text, y.token_ids, y.finish_reason)
        assert x.logprobs == pytest.approx(y.logprobs, abs=1e-4)
    assert [len(g.token_ids) for g in a[1:]] == [20, 11] and a[0].finish_reason == "stop"
    assert cached.batch_sizes == [3] and cached.stats.batches == 3  # three generate rounds
    assert plain.stats.row_steps == 3 * 20  # stopped rows computed to the end
    # 3 rows x 4 steps, 3 x 8 (two of them stop in there), the last row alone for its 8 left
    assert cached.stats.steps == 20 and cached.stats.row_steps == 3 * 4 + 3 * 8 + 8


def test_prefix_cache_matching_and_budget():
    def kv(n):
        return [(torch.zeros(1, n, 2), torch.zeros(1, n, 2))]  # one layer: 16 bytes a position

    cache = PrefixCache(max_bytes=16 * 30, min_tokens=2)
    cache.put(list(range(10)), 6, kv(10))
    cache.put(list(range(5)) + [99] * 5, 5, kv(10))
    hit = cache.match(list(range(12)))
    assert hit is not None and hit.length == 10 and cache.continued(hit)
    assert cache.match(list(range(4)) + [7]).length == 4  # never the prompt's last token...
    assert cache.match([0, 1, 2]).length == 2
    assert cache.match([5, 6, 7]) is None  # ...and nothing shorter than min_tokens
    other = cache.match([0, 1, 2, 3, 4, 99, 99, 5])
    assert other.length == 7 and cache.continued(other)
    cache.kv(hit)  # used: now the most recently used entry
    cache.put(list(range(100, 115)), 15, kv(15))  # over budget: the least recently used goes
    assert len(cache) == 2 and cache.nbytes <= 16 * 30
    assert cache.match(list(range(12))).length == 10
    assert cache.match([0, 1, 2, 3, 4, 99, 99, 5]).length == 5  # the other one went
    cache.pinned.add(hit.key)  # a running batch's entries stay, over budget if need be
    cache.put(list(range(200, 225)), 25, kv(25), pin=True)
    assert cache.match(list(range(12))).length == 10 and cache.nbytes > 16 * 30
    assert cache.match(list(range(200, 226))).length == 25
    cache.pinned.clear()
    cache.evict()
    assert cache.match(list(range(12))) is None and cache.nbytes <= 16 * 30


def test_batcher_waits_for_the_callers_of_the_previous_batch(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    engine = FallbackEngine.from_model(
        AutoModelForCausalLM.from_pretrained(tiny_model), AutoTokenizer.from_pretrained(tiny_model)
    )
    engine.max_wait_s = 0.01
    engine.submit([1, 2, 3])
    late = threading.Timer(0.2, lambda: [engine.submit([4, 5]) for _ in range(3)])
    late.start()
    assert len(engine._collect()) == 1  # nothing expected: the first gap closes the batch
    late.join()
    assert len(engine._collect()) == 3
    engine._last_rows, engine._last_run_s = 4, 10.0  # four callers, a 10 s batch
    engine.submit([1, 2, 3])
    late = threading.Timer(0.2, lambda: [engine.submit([4, 5]) for _ in range(3)])
    late.start()
    assert len(engine._collect()) == 4  # waited past the gap for the three that came back
    late.join()
