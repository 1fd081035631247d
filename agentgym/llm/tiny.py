"""Tiny local causal LMs for tests and CPU demos: a config, a locally trained tokenizer, no downloads.

``init_model(dir)`` trains a byte-level BPE tokenizer on the text of the built-in task suites and env
prompts, builds a small Llama from a config with random weights, and saves both with
``save_pretrained``. The result loads like any Hugging Face checkpoint (``from_pretrained(dir)``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, Field

CHAT_TEMPLATE = (
    '{% if tools %}<|im_start|>system\nTools (call one as <tool_call>{"name": ..., '
    '"arguments": {...}}</tool_call>):\n{{ tools | tojson }}<|im_end|>\n{% endif %}'
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] %}{{ m['content'] }}{% endif %}"
    "{% if m.get('tool_calls') %}{% for c in m['tool_calls'] %}<tool_call>"
    "{\"name\": \"{{ c['function']['name'] }}\", \"arguments\": {{ c['function']['arguments'] }}}"
    "</tool_call>{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""ChatML: simple, unambiguous, and what most open chat models use."""

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<pad>"]


class TinyModelConfig(BaseModel):
    """Shape of a tiny Llama; defaults give about 1M parameters."""

    vocab_size: int = Field(default=4096, ge=len(SPECIAL_TOKENS) + 256)
    """BPE vocabulary, including 256 byte tokens and the special tokens."""
    hidden_size: int = 128
    intermediate_size: int = 256
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    max_position_embeddings: int = 4096
    seed: int = 0
    """Seed of the random initialisation: same config, same weights."""


def corpus() -> Iterator[str]:
    """Text the tokenizer learns from: every built-in suite's instructions and configs."""
    from agentgym.task import TaskSuite, builtin_suites

    for name in builtin_suites():
        for task in TaskSuite.load(name):
            yield task.instruction
            yield json.dumps(task.config, ensure_ascii=False)


def train_tokenizer(texts: Iterator[str], vocab_size: int):  # type: ignore[no-untyped-def]
    """A byte-level BPE tokenizer with a ChatML template, wrapped for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<pad>",
        unk_token="<|endoftext|>",
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"
    return fast


def init_model(directory: str | Path, config: TinyModelConfig | None = None) -> Path:
    """Build and save a tiny chat model (tokenizer + random-init Llama) into ``directory``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    config = config or TinyModelConfig()
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(corpus(), config.vocab_size)
    torch.manual_seed(config.seed)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=config.hidden_size,
            intermediate_size=config.intermediate_size,
            num_hidden_layers=config.num_hidden_layers,
            num_attention_heads=config.num_attention_heads,
            num_key_value_heads=config.num_attention_heads,
            max_position_embeddings=config.max_position_embeddings,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            tie_word_embeddings=True,
        )
    )
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
