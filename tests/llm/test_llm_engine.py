"""LocalEngine's continuous batching (tiny Llama): exact, per-row, prefix-shared, seeded by job."""

from __future__ import annotations

import math

import pytest
import torch

from agentgym.llm.engine import FallbackEngine, LocalEngine, load_engine
from agentgym.llm.engine.kv_cache import PrefixBlocks
from agentgym.llm.sampling import SamplingSpec

SYSTEM = {"role": "system", "content": "You are looking for one of the candidate movies. " * 3}


def _prompts(engine, n=4):
    """Chats of different lengths sharing a system prompt."""
    return [
        engine.render(
            [SYSTEM, {"role": "user", "content": f"Question {i}: is it a comedy? " * (1 + 2 * i)}],
            None,
        )
        for i in range(n)
    ]


def _alone(model, prompt, n):
    """What transformers' ``generate`` gives for one prompt, greedy."""
    out = model.generate(torch.tensor([prompt]), max_new_tokens=n, do_sample=False)
    return out[0, len(prompt) :].tolist()


def _drive(engine, requests_at):
    """Add requests at given steps (sync mode) and step until all are done."""
    step = 0
    while step in requests_at or engine.scheduler.busy() or step < max(requests_at):
        for request in requests_at.get(step, []):
            engine._add(request)
        engine._step()
        step += 1


def test_greedy_equals_generate_with_chunked_prefill_and_rows_joining_late(tiny_model):
    from agentgym.llm.engine.request import make_request

    engine = LocalEngine(tiny_model, max_batch_size=3, prefix_cache_mb=0)
    assert isinstance(engine, LocalEngine)
    engine.scheduler.max_step_tokens = 24  # long prompts prefill over several steps
    prompts = _prompts(engine, 5)
    requests = [make_request(p, SamplingSpec(max_tokens=12), None) for p in prompts]
    _drive(engine, {0: requests[:2], 3: requests[2:4], 9: requests[4:]})
    for prompt, request in zip(prompts, requests, strict=True):
        assert request.future.result().token_ids == _alone(engine.model, prompt, 12)
    assert max(engine.batch_sizes) == 3  # at most max_batch_size rows in a step
    assert engine.stats.row_steps == 5 * 11  # each row decoded its own tokens, none more
    assert engine.cache.used == 0


def test_sampled_tokens_and_logprobs_equal_the_generate_path(tiny_model):
    engine = LocalEngine(tiny_model, prefix_cache_mb=64)
    fallback = FallbackEngine(tiny_model, prefix_cache_mb=0)
    prompts = _prompts(engine)
    for temperature, top_p in [(0.0, 1.0), (1.0, 1.0), (0.8, 0.9)]:
        kw = dict(
            sampling=SamplingSpec(max_tokens=16, temperature=temperature, top_p=top_p), seed=7
        )
        a, b = engine.generate_batch(prompts, **kw), fallback.generate_batch(prompts, **kw)
        for x, y in zip(a, b, strict=True):
            assert (x.token_ids, x.text, x.finish_reason) == (y.token_ids, y.text, y.finish_reason)
            assert x.logprobs == pytest.approx(y.logprobs, abs=1e-4)


def test_each_row_stops_at_its_own_stop_string_eos_or_limit(tiny_model):
    engine = LocalEngine(tiny_model, prefix_cache_mb=0)
    prompts = _prompts(engine, 3)
    full = engine.generate_batch(prompts, SamplingSpec(max_tokens=24, temperature=1.0), seed=11)
    stop = full[0].text[3:5]
    futures = [
        engine.submit(
            prompts[0], SamplingSpec(max_tokens=24, temperature=1.0, stop=[stop]), seed=11
        ),
        engine.submit(prompts[1], SamplingSpec(max_tokens=6, temperature=1.0), seed=12),
        engine.submit(prompts[2], SamplingSpec(max_tokens=24, temperature=1.0), seed=13),
    ]
    cut, short, whole = [f.result() for f in futures]
    assert cut.text == full[0].text[: full[0].text.find(stop)] and cut.finish_reason == "stop"
    assert cut.token_ids == full[0].token_ids[: len(cut.token_ids)]
    assert short.token_ids == full[1].token_ids[:6] and short.finish_reason == "length"
    assert whole.token_ids == full[2].token_ids
    engine.close()


def test_next_turn_and_shared_system_prompt_prefill_only_new_tokens(tiny_model):
    cached = LocalEngine(tiny_model, prefix_cache_mb=64)
    plain = LocalEngine(tiny_model, prefix_cache_mb=0)
    prompts = _prompts(cached)
    a = cached.generate_batch(prompts, SamplingSpec(max_tokens=8))
    b = plain.generate_batch(prompts, SamplingSpec(max_tokens=8))
    assert [g.token_ids for g in a] == [g.token_ids for g in b]
    shared = len(cached.tokenizer.apply_chat_template([SYSTEM], tokenize=True))
    unique = sum(len(p) for p in prompts) - (len(prompts) - 1) * shared
    block = cached.prefix_cache.block_size
    assert cached.stats.prefill_tokens <= unique + len(prompts) * block  # system prompt once
    assert plain.stats.prefill_tokens == sum(len(p) for p in prompts)
    before = cached.stats.prefill_tokens
    nexts = [p + g.token_ids + p[-5:] for p, g in zip(prompts, a, strict=True)]  # next turns
    c = cached.generate_batch(nexts, SamplingSpec(max_tokens=8))
    assert [g.token_ids for g in c] == [
        g.token_ids for g in plain.generate_batch(nexts, SamplingSpec(max_tokens=8))
    ]
    assert cached.stats.prefill_tokens - before <= len(prompts) * (5 + 8 + block)
    cached.clear_prefix_cache()
    assert len(cached.prefix_cache) == 0


def test_a_seeded_request_gives_the_same_text_alone_or_in_any_batch(tiny_model):
    engine = LocalEngine(tiny_model, max_batch_size=8, prefix_cache_mb=64)
    prompts = _prompts(engine)
    kw = dict(sampling=SamplingSpec(max_tokens=16, temperature=1.0))
    alone = [engine.generate_batch([p], seeds=[100 + i], **kw)[0] for i, p in enumerate(prompts)]
    order = [2, 0, 3, 1]
    mixed = engine.generate_batch([prompts[i] for i in order], seeds=[100 + i for i in order], **kw)
    for i, g in zip(order, mixed, strict=True):
        assert g.token_ids == alone[i].token_ids
    assert len({tuple(g.token_ids) for g in alone}) > 1
    with pytest.raises(ValueError, match="seeds has 1 entries for 2 prompts"):
        engine.generate_batch(prompts[:2], seeds=[1], **kw)


def test_unsupported_models_fall_back_to_the_generate_path(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    tok = AutoTokenizer.from_pretrained(tiny_model)
    assert isinstance(load_engine("local", model, tokenizer=tok), LocalEngine)
    assert isinstance(load_engine("local", tiny_model), LocalEngine)
    wrapped = torch.nn.Sequential()  # not a LlamaForCausalLM: the generate path takes it
    wrapped.config = model.config  # type: ignore[assignment]
    assert isinstance(load_engine("local", wrapped, tokenizer=tok), FallbackEngine)
    with pytest.raises(ValueError, match="continuous batching cannot run this model: Sequential"):
        LocalEngine.from_model(wrapped, tok)
    with pytest.raises(ValueError, match="unknown engine 'fast'; use one of: local, vllm"):
        load_engine("fast", tiny_model)


def test_sync_weights_is_a_no_op_on_shared_weights_and_copies_into_a_loaded_engine(tiny_model):
    """One way for new weights to reach an engine: over the trainer's own module nothing is
    copied (only cached prefixes go); an engine that loaded its own copy takes the new state."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    tok = AutoTokenizer.from_pretrained(tiny_model)
    shared = load_engine("local", model, tokenizer=tok, prefix_cache_mb=64)
    loaded = LocalEngine(tiny_model, prefix_cache_mb=64)
    assert (shared.shares_weights, loaded.shares_weights) == (True, False)
    prompts = _prompts(shared, 2)
    shared.generate_batch(prompts, SamplingSpec(max_tokens=4))
    assert len(shared.prefix_cache) > 0
    with torch.no_grad():  # an "update" that changes greedy choices
        g = torch.Generator().manual_seed(0)
        for param in model.parameters():
            param.add_(torch.randn(param.shape, generator=g))
    shared.sync_weights(model)
    assert shared.model is model and len(shared.prefix_cache) == 0
    before = loaded.generate_batch(prompts, SamplingSpec(max_tokens=6))
    loaded.sync_weights(model)
    after = loaded.generate_batch(prompts, SamplingSpec(max_tokens=6))
    assert loaded.model is not model
    assert [g.token_ids for g in after] == [
        g.token_ids for g in shared.generate_batch(prompts, SamplingSpec(max_tokens=6))
    ]
    assert [g.token_ids for g in after] != [g.token_ids for g in before]
    loaded.close()


def test_prefix_blocks_match_by_chain_and_evict_least_recently_used():
    def read(start, end):
        return torch.zeros(1, 2, 1, end - start, 2)  # 16 bytes a position

    blocks = PrefixBlocks(max_bytes=16 * 4 * 3, block_size=4)  # three blocks
    keys: list[int] = []
    blocks.store(list(range(10)), 10, keys, read)
    assert len(keys) == 2 and len(blocks) == 2  # only full blocks
    assert len(blocks.match(list(range(12)), 11)) == 2
    assert len(blocks.match(list(range(8)), 7)) == 1  # never the prompt's last token
    assert blocks.match([9, *range(1, 12)], 11) == []  # a block is found by its whole chain
    other: list[int] = []
    blocks.store([7] * 8, 8, other, read)  # over budget: the least recently used block goes
    assert len(blocks) == 3 and blocks.nbytes <= 16 * 4 * 3
    assert len(blocks.match(list(range(12)), 11)) == 1  # its second block, used least recently
    assert blocks.gather(other).shape == (1, 2, 1, 8, 2)


def test_decode_rows_read_their_shared_prefix_once_and_decode_the_same_tokens(tiny_model):
    engine = LocalEngine(tiny_model, prefix_cache_mb=64)
    prompts = _prompts(engine)
    shared: list[int] = []
    forward = engine.runner.forward

    def spy(chunks, cache, prefix=0):
        shared.append(prefix)
        return forward(chunks, cache, prefix)

    engine.runner.forward = spy
    kw = dict(sampling=SamplingSpec(max_tokens=12, temperature=0.8), seed=3)
    once = engine.generate_batch(prompts, **kw)
    assert max(shared) >= engine.prefix_cache.block_size  # the system prompt, read once a step
    engine.clear_prefix_cache()
    engine.runner.share_prefix = False
    per_row = engine.generate_batch(prompts, **kw)
    for a, b in zip(once, per_row, strict=True):
        assert a.token_ids == b.token_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)
    greedy = engine.generate_batch(prompts, SamplingSpec(max_tokens=12))
    for prompt, g in zip(prompts, greedy, strict=True):
        assert g.token_ids == _alone(engine.model, prompt, 12)


def test_a_slot_that_computed_a_stored_block_itself_shares_no_prefix_past_it():
    def read(start, end):
        return torch.zeros(1, 2, 1, end - start, 2)

    blocks = PrefixBlocks(max_bytes=1 << 20, block_size=4)
    first: list[int] = []
    fresh = blocks.store(list(range(8)), 8, first, read)
    assert fresh == blocks.serials(first) and len(fresh) == 2  # read from this slot: exact
    again: list[int] = []
    assert (
        blocks.store(list(range(12)), 12, again, read) == []
    )  # its first block came from elsewhere
    assert len(again) == 3


def test_a_lora_adapter_folder_gets_continuous_batching_with_its_adapters(tiny_model, tmp_path):
    """A LoRA run's checkpoint (``adapter_config.json`` naming its base) runs on the base's
    architecture, so it is batched continuously (it fell back to the generate path, 8-row
    Household evals prefilling one prompt at a time), with the adapters applied: the same
    greedy tokens as the generate path, and not the base's."""
    from agentgym.train.policy import LoraConfig, load_model

    model = load_model(
        tiny_model, lora=LoraConfig(r=4, alpha=8, target_modules=["q_proj", "v_proj"])
    )
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5, generator=torch.Generator().manual_seed(0))
    model.save_pretrained(tmp_path)
    for name in ("chat_template.jinja", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((tiny_model / name).read_bytes())
    engine = LocalEngine(tmp_path, prefix_cache_mb=0)
    assert isinstance(engine, LocalEngine)
    fallback = FallbackEngine(tmp_path, prefix_cache_mb=0)
    base = LocalEngine(tiny_model, prefix_cache_mb=0)
    prompts = _prompts(engine)
    kw = dict(sampling=SamplingSpec(max_tokens=12, temperature=0.0))
    ours, theirs = engine.generate_batch(prompts, **kw), fallback.generate_batch(prompts, **kw)
    assert [g.token_ids for g in ours] == [g.token_ids for g in theirs]
    assert [g.token_ids for g in ours] != [g.token_ids for g in base.generate_batch(prompts, **kw)]
    for e in (engine, fallback, base):
        e.close()


def test_a_bfloat16_engine_computes_weights_and_cache_in_bfloat16(tiny_model):
    """``dtype="bfloat16"`` (the ``hf:...?dtype=bfloat16`` option) loads the weights and keeps
    the KV cache in bfloat16; the sampler still reads float32 logits, so logprobs stay finite."""
    engine = LocalEngine(tiny_model, prefix_cache_mb=0, dtype="bfloat16")
    assert {p.dtype for p in engine.model.parameters()} == {torch.bfloat16}
    gens = engine.generate_batch(_prompts(engine), SamplingSpec(max_tokens=8, temperature=0.0))
    assert engine.cache.layer(0)[0].dtype == torch.bfloat16
    assert all(g.token_ids and all(map(math.isfinite, g.logprobs)) for g in gens)
    engine.close()


def test_an_unknown_dtype_is_one_line_naming_the_allowed_ones(tiny_model):
    with pytest.raises(ValueError, match="unknown dtype 'float16'; use one of: float32, bfloat16"):
        LocalEngine(tiny_model, dtype="float16")
