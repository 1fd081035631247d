"""The update's shortcuts change nothing but time: the LM head at loss positions only, and
cached states below the first adapted layer, give the same logprobs and gradients; leaving out
zero-advantage rows, length-sorted micro-batches and the rollouts' prefix cache give the same
weights after a GRPO step."""

from __future__ import annotations

import pytest
import torch

from agentgym.episode import Episode
from agentgym.task import write_tasks
from agentgym.testing.noop import noop_suite
from agentgym.train.batch import build_batch
from agentgym.train.config import TrainConfig, set_dotted
from agentgym.train.episode import TokenEpisode
from agentgym.train.policy import load_model, token_logprobs
from agentgym.train.trainer import Trainer


def _batch():
    eps = []
    for n, length in enumerate((9, 14, 6)):
        ep = TokenEpisode(episode=Episode(task_id=str(n), env_id=""), group="g")
        ids = [(7 * n + 3 * i) % 200 + 5 for i in range(length)]
        ep.extend(ids[:3], mask=0)
        ep.extend(ids[3:5], mask=1, logprobs=[0.0, 0.0])
        ep.extend(ids[5:-2], mask=0)
        ep.extend(ids[-2:], mask=1, logprobs=[0.0, 0.0])
        eps.append(ep)
    return build_batch(eps, None, pad_id=0)


@pytest.mark.parametrize("lora", [False, True])
def test_loss_positions_only_matches_the_full_head(tiny_model, lora):
    from agentgym.train.policy import LoraConfig

    torch.manual_seed(0)
    model = load_model(tiny_model, lora=LoraConfig(r=4) if lora else None)
    for p in model.parameters():  # LoRA B starts at 0: make the adapters matter
        if p.requires_grad:
            p.data.add_(0.05 * torch.randn_like(p))
    mb = _batch()
    only = mb.weights > 0
    full, full_ent = token_logprobs(model, mb)
    fast, fast_ent = token_logprobs(model, mb, only)
    assert torch.allclose(full * only, fast, atol=1e-5)
    assert torch.allclose(full_ent * only, fast_ent, atol=1e-4)
    assert (fast[~only] == 0).all()
    params = [p for p in model.parameters() if p.requires_grad]
    g_full = torch.autograd.grad((full * mb.weights).sum(), params)
    g_fast = torch.autograd.grad((fast * mb.weights).sum(), params)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(g_full, g_fast, strict=True))


def test_cached_frozen_layers_give_the_same_loss_and_gradients(tiny_model):
    """LoRA on the top layer only: the rows' states below it, computed once and cached, give
    the logprobs and adapter gradients of the full forward, on the first call and from cache."""
    from agentgym.train.frozen import FrozenPrefix
    from agentgym.train.policy import LoraConfig

    torch.manual_seed(0)
    model = load_model(tiny_model, lora=LoraConfig(r=4, layers=[1]))
    for p in model.parameters():
        if p.requires_grad:
            p.data.add_(0.05 * torch.randn_like(p))
    frozen = FrozenPrefix.of(model, 2**20)
    assert frozen is not None and frozen.split == 1
    assert FrozenPrefix.of(load_model(tiny_model, lora=LoraConfig(r=4)), 2**20) is None
    mb = _batch()
    only = mb.weights > 0
    params = [p for p in model.parameters() if p.requires_grad]
    full, _ = token_logprobs(model, mb, only)
    g_full = torch.autograd.grad((full * mb.weights).sum(), params)
    for _ in range(2):  # computed, then read from the cache
        cut, _ = token_logprobs(model, mb, only, frozen)
        g_cut = torch.autograd.grad((cut * mb.weights).sum(), params)
        assert torch.allclose(full, cut, atol=1e-5)
        assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(g_full, g_cut, strict=True))
    assert len(frozen.cache) == mb.rows
    whole, _ = token_logprobs(model, mb, None, frozen)  # every position (SFT context loss)
    assert torch.allclose(whole * only, full, atol=1e-5)


@pytest.fixture(scope="module")
def noop_sft(tiny_model, tmp_path_factory):
    """The tiny model after a little SFT on NoOp: some groups succeed, some tie."""
    root = tmp_path_factory.mktemp("speed")
    write_tasks(root / "noop.jsonl", noop_suite(6, length=2).tasks)
    cfg = _cfg(
        tiny_model, root, root / "sft", **{"algo.name": "sft", "steps": 21, "optim.lr": 1e-2}
    )
    Trainer(cfg).run()
    return root


def _cfg(model, root, out, **over) -> TrainConfig:
    data: dict = {
        "model": {"path": str(model), "device": "cpu"},
        "env": {"id": "NoOp-v0", "suite": str(root / "noop.jsonl"), "system_prompt": False},
        "rollout": {"tasks_per_step": 4, "group_size": 4, "max_turns": 2, "max_tokens": 4},
        "optim": {"lr": 3e-3, "micro_batch_size": 3},
        "sft": {"batch_size": 6},
        "steps": 1, "seed": 1, "out_dir": str(out), "threads": 1, "resume": False,
    }  # fmt: skip
    for key, value in over.items():
        set_dotted(data, key, value)
    return TrainConfig.model_validate(data)


def test_skipping_tied_rows_and_sorting_leave_the_step_unchanged(noop_sft):
    root = noop_sft
    runs, reused = {}, {}
    for name, fast in (("fast", True), ("plain", False)):
        # seed 0: some of the 4 groups tie under job-keyed sampling seeds (seed 1's tie none)
        cfg = _cfg(root / "sft" / "final", root, root / name, seed=0, **{
            "algo.skip_zero_advantage": fast, "algo.loss_logits_only": fast,
            "optim.sort_by_length": fast, "rollout.prefix_cache_mb": 64 if fast else 0})  # fmt: skip
        trainer = Trainer(cfg)
        runs[name] = (trainer.run(), trainer.model.state_dict())
        reused[name] = trainer.engine.stats.cached_tokens
    (fast_m, fast_w), (plain_m, plain_w) = runs["fast"], runs["plain"]
    assert reused["plain"] == 0 < reused["fast"]  # later turns continued from cached keys
    assert fast_m["reward"] == plain_m["reward"] and 0 < plain_m["acr"] < 1  # some groups tie
    assert fast_m["trained_rows"] < plain_m["trained_rows"] == plain_m["episodes"]
    # Adam's first step moves a weight by about lr (3e-3) whatever its gradient's size, so float
    # noise in near-zero gradients shows up as ~1e-6; a real difference would be ~1e-3
    assert all(torch.allclose(fast_w[k], plain_w[k], atol=5e-5) for k in plain_w)
    assert any(not torch.equal(plain_w[k], w) for k, w in load_model(root / "sft" / "final")
               .state_dict().items())  # fmt: skip
