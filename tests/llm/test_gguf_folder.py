"""`hf:DIR` where DIR holds a GGUF file and no config.json: converted once into the user cache
(keyed by the file's sha256) and loaded like any checkpoint. The GGUF here is written from the
tiny test model with the `gguf` package's writer, as llama.cpp's converter lays a Llama out
(F32 tensors, q/k permuted, byte-level BPE vocabulary and merges), so the round trip can be
checked exactly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
torch = pytest.importorskip("torch")

import agentgym  # noqa: E402
from agentgym.llm.models import MARKER, resolve_model_path  # noqa: E402
from agentgym.task import TaskSuite  # noqa: E402

LAYER_PARTS = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
    "input_layernorm": "attn_norm",
    "post_attention_layernorm": "ffn_norm",
}
TOP = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight"}


def _permute(x: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's q/k row order (GGUF readers undo it)."""
    return (
        x.reshape(heads, 2, x.shape[0] // heads // 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)
    )


def write_gguf(checkpoint: Path, out: Path, with_template: bool = True) -> None:
    from safetensors.numpy import load_file

    cfg = json.loads((checkpoint / "config.json").read_text())
    tok = json.loads((checkpoint / "tokenizer.json").read_text())
    writer = gguf.GGUFWriter(str(out), "llama")
    heads, kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    writer.add_context_length(cfg["max_position_embeddings"])
    writer.add_embedding_length(cfg["hidden_size"])
    writer.add_block_count(cfg["num_hidden_layers"])
    writer.add_feed_forward_length(cfg["intermediate_size"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    writer.add_rope_freq_base(cfg["rope_parameters"]["rope_theta"])
    writer.add_rope_dimension_count(cfg["head_dim"])
    writer.add_vocab_size(cfg["vocab_size"])
    tokens = [t for t, _ in sorted(tok["model"]["vocab"].items(), key=lambda kv: kv[1])]
    special = {a["content"] for a in tok["added_tokens"]}
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([3 if t in special else 1 for t in tokens])  # 3: control
    writer.add_token_merges([" ".join(m) for m in tok["model"]["merges"]])
    writer.add_bos_token_id(cfg["bos_token_id"])
    writer.add_eos_token_id(cfg["eos_token_id"])
    writer.add_pad_token_id(cfg["pad_token_id"])
    if with_template:
        writer.add_chat_template((checkpoint / "chat_template.jinja").read_text())
    for key, value in load_file(str(checkpoint / "model.safetensors")).items():
        if key in TOP:
            name = TOP[key]
        else:
            layer, part = key.split(".")[2], ".".join(key.split(".")[3:-1])
            name = f"blk.{layer}.{LAYER_PARTS[part]}.weight"
            if part in ("self_attn.q_proj", "self_attn.k_proj"):
                value = _permute(value, heads if part == "self_attn.q_proj" else kv_heads)
        writer.add_tensor(name, value.astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_a_gguf_folder_converts_once_and_loads_as_the_same_model(tiny_model, tmp_path, monkeypatch):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setenv("AGENTGYM_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "downloaded"
    folder.mkdir()
    write_gguf(Path(tiny_model), folder / "tiny.gguf")

    converted = Path(resolve_model_path(str(folder)))
    assert converted.parent == tmp_path / "cache" / "models" and converted.name.startswith("gguf-")
    provenance = json.loads((converted / MARKER).read_text())
    assert provenance["source"] == str(folder / "tiny.gguf") and len(provenance["sha256"]) == 64
    stamp = (converted / MARKER).stat().st_mtime_ns
    assert Path(resolve_model_path(str(folder))) == converted  # once: the second call reuses it
    assert (converted / MARKER).stat().st_mtime_ns == stamp

    original = AutoModelForCausalLM.from_pretrained(tiny_model).state_dict()
    loaded = AutoModelForCausalLM.from_pretrained(converted).state_dict()
    assert set(loaded) == set(original)
    assert all(torch.equal(loaded[k], original[k]) for k in original)
    text = 'ask[color=blue] <|im_start|>user\nHello, "world"'
    ids = AutoTokenizer.from_pretrained(tiny_model)(text).input_ids
    assert AutoTokenizer.from_pretrained(converted)(text).input_ids == ids

    tasks = TaskSuite.load("clarify/test").filter((), 2)
    result = agentgym.evaluate(tasks, f"hf:{folder}?max_tokens=4", db=tmp_path / "r.db")
    assert [r["status"] for r in result.episode_rows()] == ["limit", "limit"]  # a random model


def test_a_gguf_without_a_chat_template_is_refused_clearly(tiny_model, tmp_path, monkeypatch):
    from agentgym.llm.engine import LocalEngine

    monkeypatch.setenv("AGENTGYM_CACHE", str(tmp_path / "cache"))
    (tmp_path / "bare").mkdir()
    write_gguf(Path(tiny_model), tmp_path / "bare" / "tiny.gguf", with_template=False)
    with pytest.raises(ValueError, match="has no chat template: add a chat_template.jinja"):
        LocalEngine(tmp_path / "bare")
