"""LocalEngine's memory budget (tiny Llama): requests that do not fit wait, the keys and values
never pass the budget, and an idle engine gives its memory back."""

from __future__ import annotations

import os
import time

import pytest

from agentgym.llm.engine import LocalEngine
from agentgym.llm.engine.memory import IDLE_PREFIX_SHARE, available_bytes, default_budget
from agentgym.llm.sampling import SamplingSpec

NEW_TOKENS = 8


def _prompts(engine: LocalEngine, n: int) -> list[list[int]]:
    """Distinct chats of about the same length (no shared prefix beyond the template)."""
    return [
        engine.render([{"role": "user", "content": f"{i} " + "word " * (40 + i)}], None)
        for i in range(n)
    ]


def _budget_for(engine: LocalEngine, prompts: list[list[int]], sequences: int) -> float:
    """GiB that hold ``sequences`` of the longest prompt at their token limit, and no more."""
    length = -(-(max(map(len, prompts)) + NEW_TOKENS) // 64) * 64
    return sequences * length * engine.cache.nbytes_per_token() / (1 << 30)


def test_requests_that_do_not_fit_wait_and_the_cache_never_passes_the_budget(tiny_model):
    probe = LocalEngine(tiny_model, prefix_cache_mb=0, kv_cache_gb=1.0)
    prompts = _prompts(probe, 6)
    unbounded = probe.generate_batch(prompts, SamplingSpec(max_tokens=NEW_TOKENS))
    engine = LocalEngine(tiny_model, prefix_cache_mb=64, kv_cache_gb=_budget_for(probe, prompts, 2))
    seen: list[tuple[int, int]] = []  # (running sequences, bytes of slots and prefix blocks)
    forward = engine.runner.forward

    def spy(chunks, cache, shared=0):
        prefix = engine.prefix_cache.nbytes if engine.prefix_cache is not None else 0
        seen.append((len(engine.scheduler.running), cache.nbytes + prefix))
        return forward(chunks, cache, shared)

    engine.runner.forward = spy
    bounded = engine.generate_batch(prompts, SamplingSpec(max_tokens=NEW_TOKENS))
    assert [g.token_ids for g in bounded] == [g.token_ids for g in unbounded]
    assert max(n for n, _ in seen) == 2  # six asked at once, two ran at a time
    assert max(b for _, b in seen) <= engine.memory_bytes
    probe.close()
    engine.close()


def test_an_idle_engine_shrinks_its_slots_and_prefix_blocks(tiny_model):
    engine = LocalEngine(tiny_model, prefix_cache_mb=64, kv_cache_gb=0.01)
    engine.release_after_s = 0.05
    prompts = _prompts(engine, 8)
    futures = [
        engine.submit(p, SamplingSpec(max_tokens=NEW_TOKENS)) for p in prompts
    ]  # the engine thread
    assert all(f.result().token_ids for f in futures)
    loaded = engine.cache.nbytes
    assert loaded > engine.cache.bytes_for(1, 64)
    deadline = time.monotonic() + 30  # the thread releases after 0.05 s idle; 30 s is a wide margin
    while engine.cache.nbytes == loaded and time.monotonic() < deadline:
        time.sleep(0.02)
    assert engine.cache.nbytes == engine.cache.bytes_for(1, 64)  # the smallest slot tensor
    assert engine.prefix_cache is not None
    assert engine.prefix_cache.nbytes <= engine.memory_bytes // IDLE_PREFIX_SHARE
    again = engine.submit(prompts[0], SamplingSpec(max_tokens=NEW_TOKENS)).result()  # it grows back
    assert again.token_ids == futures[0].result().token_ids
    engine.close()


def test_the_default_budget_is_proportionate_to_the_model_and_the_free_memory(tiny_model):
    engine = LocalEngine(tiny_model, prefix_cache_mb=0)
    weights = sum(p.numel() * p.element_size() for p in engine.model.parameters())
    one_context = engine.cache.nbytes_per_token() * engine.max_context_tokens
    free = available_bytes()
    budget = int(1.5 * weights)  # the documented default: 1.5 times the weights
    expected = max(budget if free is None else min(budget, free // 4), one_context)
    assert engine.memory_bytes == expected
    assert default_budget(engine.model, 1, 10) == (
        budget if free is None else min(budget, free // 4)
    )
    assert available_bytes("MemTotal: 100 kB\nMemAvailable:  2048 kB\n") == 2048 * 1024
    with pytest.raises(ValueError, match="kv_cache_gb must be above 0"):
        LocalEngine(tiny_model, kv_cache_gb=0)
    engine.close()


def test_a_shared_system_prompt_is_held_once_so_every_episode_runs_at_once(tiny_model):
    """Six chats with one long system prompt, in a budget that holds six of them only if that
    prompt is held once: all six decode together, the tokens are the unbounded engine's, and
    the keys and values (base, slots and prefix blocks) never pass the budget."""
    probe = LocalEngine(tiny_model, prefix_cache_mb=0, kv_cache_gb=1.0)
    system = {"role": "system", "content": "rules " * 300}
    prompts = [
        probe.render([system, {"role": "user", "content": f"{i} " + "word " * (3 + i)}], None)
        for i in range(6)
    ]
    unbounded = probe.generate_batch(prompts, SamplingSpec(max_tokens=NEW_TOKENS))
    per_token = probe.cache.nbytes_per_token()
    shared = len(os.path.commonprefix(prompts))
    whole = -(-(max(map(len, prompts)) + NEW_TOKENS) // 64) * 64
    assert 6 * whole > 3 * (shared + 6 * 64 + 128)  # copied into each slot, six do not fit
    budget = 3 * (shared + 6 * 64 + 128) * per_token  # held once, with room for the blocks
    engine = LocalEngine(tiny_model, prefix_cache_mb=64, kv_cache_gb=budget / (1 << 30))
    seen: list[tuple[int, int, int]] = []  # (running, base positions, bytes)
    forward = engine.runner.forward

    def spy(chunks, cache, shared=0):
        held = cache.nbytes + engine.prefix_cache.nbytes
        seen.append((len(engine.scheduler.running), cache.offset, held))
        return forward(chunks, cache, shared)

    engine.runner.forward = spy
    bounded = engine.generate_batch(prompts, SamplingSpec(max_tokens=NEW_TOKENS))
    assert [g.token_ids for g in bounded] == [g.token_ids for g in unbounded]
    assert max(n for n, _, _ in seen) == 6
    assert max(base for _, base, _ in seen) >= shared - engine.prefix_cache.block_size
    assert max(b for _, _, b in seen) <= engine.memory_bytes
    probe.close()
    engine.close()


def test_the_next_turn_of_an_episode_continues_its_parked_slot_under_a_small_budget(tiny_model):
    """Four two-turn episodes in a budget that holds their four slots and little more: the prefix
    blocks cannot keep every history beside the slots, so the second turns compute only their new
    tokens because each one takes over its episode's parked slot. Tokens are the unbounded
    engine's, and the keys and values never pass the budget."""
    probe = LocalEngine(tiny_model, prefix_cache_mb=0, kv_cache_gb=1.0)
    first = _prompts(probe, 4)
    spec = SamplingSpec(max_tokens=NEW_TOKENS)
    observation = probe.render([{"role": "user", "content": "it rains " * 6}], None)

    def second(turn1):
        return [p + g.token_ids + observation for p, g in zip(first, turn1, strict=True)]

    want1 = probe.generate_batch(first, spec)
    want2 = probe.generate_batch(second(want1), spec)
    longest = max(map(len, second(want1))) + NEW_TOKENS
    budget = 4 * (-(-longest // 64) * 64 + 64) * probe.cache.nbytes_per_token()
    engine = LocalEngine(tiny_model, prefix_cache_mb=64, kv_cache_gb=budget / (1 << 30))
    seen: list[int] = []  # bytes of slots and prefix blocks at every step
    forward = engine.runner.forward

    def spy(chunks, cache, shared=0):
        seen.append(cache.nbytes + engine.prefix_cache.nbytes)
        return forward(chunks, cache, shared)

    engine.runner.forward = spy
    got1 = engine.generate_batch(first, spec)
    before = engine.stats.prefill_tokens
    prompts2 = second(got1)
    got2 = engine.generate_batch(prompts2, spec)
    assert [g.token_ids for g in got1 + got2] == [g.token_ids for g in want1 + want2]
    new = sum(len(p) - len(q) for p, q in zip(prompts2, first, strict=True))  # per episode:
    bs = engine.prefix_cache.block_size  # its output, the observation, and a partial block
    assert engine.stats.prefill_tokens - before <= new + 4 * bs
    assert len(engine.scheduler.parked) == 4
    assert max(seen) <= engine.memory_bytes
    probe.close()
    engine.close()
