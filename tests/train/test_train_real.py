"""The trainer on a real pretrained model's shape and template: SmolLM2's chat template gives
token-exact turns, LoRA on a small SmolLM2-shaped Llama (GQA, tied embeddings, its tokenizer)
trains with gradient checkpointing and resumes exactly, and its adapter folder loads as
``hf:PATH``. Uses SmolLM2's tokenizer and config only (no 135M forward pass); skipped where
``hf:smollm2`` has not been fetched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from agentgym.llm.models import is_fetched, model_dir
from agentgym.task import write_tasks
from agentgym.testing.noop import noop_suite
from agentgym.train.chat import ChatFormat
from agentgym.train.config import TrainConfig, set_dotted
from agentgym.train.policy import load_model, load_tokenizer, resolve_checkpoint
from agentgym.train.trainer import Trainer

smollm2 = pytest.mark.skipif(not is_fetched("smollm2"), reason="hf:smollm2 not fetched")


def test_missing_checkpoint_is_a_clear_error_not_a_hub_lookup(tmp_path):
    missing = str(tmp_path / "nothing-here")
    with pytest.raises(FileNotFoundError, match="no checkpoint at .*agentgym model init"):
        resolve_checkpoint(missing)
    with pytest.raises(FileNotFoundError, match="use hf:smollm2"):
        load_model("HuggingFaceTB/not-a-local-folder")
    cfg = TrainConfig.model_validate({"model": {"path": missing}, "env": {"id": "NoOp-v0"}})
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        Trainer(cfg)


def test_auto_device_and_precision():
    cfg = TrainConfig.model_validate({"model": {"path": "m"}, "env": {"id": "NoOp-v0"}})
    gpu = torch.cuda.is_available()
    assert cfg.model.device == ("cuda" if gpu else "cpu")
    assert cfg.model.precision == ("bf16" if gpu else "fp32")
    cpu = TrainConfig.model_validate(
        {"model": {"path": "m", "device": "cpu"}, "env": {"id": "NoOp-v0"}}
    )
    assert cpu.model.precision == "fp32"


@smollm2
def test_smollm2_turns_are_token_exact():
    """Prompt + sampled actions (ending with <|im_end|>, or cut before it) + observation turns
    equal the template's rendering of the whole chat, token for token."""
    tok = load_tokenizer("hf:smollm2")
    assert resolve_checkpoint("smollm2") == resolve_checkpoint("hf:smollm2")
    chat = ChatFormat(tok)
    assert chat.eos_text == "<|im_end|>" and chat.before_obs == "<|im_end|>\n<|im_start|>user\n"
    messages = [
        {"role": "system", "content": "Act."},
        {"role": "user", "content": "You are in a room. Looking around you see desk 1, bed 1."},
    ]
    ids = chat.prompt("Act.", messages[1]["content"])
    turns = [("go to desk 1", "On desk 1 you see pen 2."), ("take pen 2 from desk 1", "Taken.")]
    for n, (action, observation) in enumerate(turns):
        sampled = chat.encode(action) + ([chat.eos_id] if n == 0 else [])  # 2nd: cut at limit
        ids += sampled + chat.observation(observation, action_ended_with_eos=n == 0)
        messages += [
            {"role": "assistant", "content": action},
            {"role": "user", "content": observation},
        ]
    full = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    assert ids == list(full["input_ids"] if hasattr(full, "keys") else full)


@pytest.fixture(scope="module")
def small_smollm2(tmp_path_factory):
    """SmolLM2's architecture (GQA 3:1, tied embeddings, its tokenizer and template) at 2 layers
    of width 48, random weights."""
    if not is_fetched("smollm2"):
        pytest.skip("hf:smollm2 not fetched")
    from transformers import AutoConfig, AutoModelForCausalLM

    src = model_dir("smollm2")
    config = AutoConfig.from_pretrained(src)
    config.update(
        {"hidden_size": 48, "intermediate_size": 96, "num_hidden_layers": 2,
         "num_attention_heads": 6, "num_key_value_heads": 2, "head_dim": 8}
    )  # fmt: skip
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("small-smollm2")
    AutoModelForCausalLM.from_config(config).save_pretrained(out)
    load_tokenizer(src).save_pretrained(out)
    return out


def _cfg(model: Path, out: Path, **over: object) -> TrainConfig:
    suite = out.parent / "noop.jsonl"
    write_tasks(suite, noop_suite(4, length=2).tasks)
    data: dict = {
        "model": {"path": str(model), "device": "cpu", "gradient_checkpointing": True,
                  "lora": {"r": 4, "alpha": 8}},
        "env": {"id": "NoOp-v0", "suite": str(suite)},
        "rollout": {"tasks_per_step": 2, "group_size": 3, "max_turns": 2, "max_tokens": 3},
        "optim": {"lr": 1e-2, "micro_batch_size": 4},
        "steps": 2, "out_dir": str(out), "threads": 1,
    }  # fmt: skip
    for key, value in over.items():
        set_dotted(data, key, value)
    return TrainConfig.model_validate(data)


def _adapters(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(path / "adapter_model.safetensors")


def test_lora_on_smollm2_shape_resumes_exactly_and_loads_as_hf_path(small_smollm2, tmp_path):
    sft = {"algo.name": "sft", "sft.batch_size": 2}
    straight = Trainer(_cfg(small_smollm2, tmp_path / "a", **sft))
    inner = straight.model.base_model.model  # transformers 5.20 renamed the flag
    assert getattr(inner, "is_activation_checkpointing", None) or inner.is_gradient_checkpointing
    straight.run()
    half = _cfg(small_smollm2, tmp_path / "b", steps=1, save_every=1, **sft)
    Trainer(half).run()
    resumed = Trainer(half.model_copy(update={"steps": 2}))
    assert resumed.step == 1
    resumed.run()
    a, b = _adapters(tmp_path / "a" / "final"), _adapters(tmp_path / "b" / "final")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert any(k for k in a if "lora_B" in k and a[k].abs().sum() > 0)  # it did train
    final = tmp_path / "a" / "final"
    assert json.loads((final / "adapter_config.json").read_text())["base_model_name_or_path"] == (
        str(Path(small_smollm2).resolve())
    )
    # hf:FINAL (the adapter folder, as `agentgym eval`/`serve` load it) == the trained policy
    from agentgym.llm.engine import LocalEngine

    ids = torch.tensor([ChatFormat(straight.tokenizer).prompt("", "noop?")])
    straight.model.eval()
    with torch.no_grad():
        want = straight.model(input_ids=ids).logits
        served = LocalEngine(f"{final}", max_batch_size=1).model(input_ids=ids).logits
        merged = load_model(final)(input_ids=ids).logits
    assert torch.allclose(want, served, atol=1e-5) and torch.allclose(want, merged, atol=1e-5)
    # GRPO with KL from the LoRA SFT checkpoint: its adapters keep training, the reference is the
    # base with adapters off
    rl = Trainer(_cfg(final, tmp_path / "rl", steps=1, **{"algo.kl_coef": 0.05}))
    assert rl.algo.reference is not None and rl.algo.reference.model is rl.model
    trainable = {n for n, p in rl.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    metrics = rl.run()
    assert metrics["episodes"] == 6 and "kl" in metrics
