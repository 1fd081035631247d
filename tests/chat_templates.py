"""Five families of chat templates, written for the tiny tokenizer, and a tiny model for each.

Each is the family's own layout (special tokens, roles, where the end-of-turn token goes, what
is trimmed); tool calls are left out. ``qwen3`` is the Qwen3 thinking template (as in
Qwen3-Thinking-2507): the generation prompt opens ``<think>`` and an earlier reply is re-read
without its reasoning, so the chat's earlier prompt is not a prefix of its later one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

LLAMA3 = (
    "{{- bos_token }}{%- for m in messages %}<|start_header_id|>{{ m['role'] }}"
    "<|end_header_id|>\n\n{{ m['content'] | trim }}<|eot_id|>{%- endfor %}"
    "{%- if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
CHATML_QWEN25 = (
    "{%- if messages[0]['role'] != 'system' %}<|im_start|>system\nYou are Qwen, created by "
    "Alibaba Cloud. You are a helpful assistant.<|im_end|>\n{% endif %}"
    "{%- for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
QWEN3_THINKING = (
    "{%- set ns = namespace(last_query=-1) %}"
    "{%- for m in messages %}{%- if m['role'] == 'user' %}{%- set ns.last_query = loop.index0 %}"
    "{%- endif %}{%- endfor %}"
    "{%- for m in messages %}"
    "{%- if m['role'] == 'assistant' %}"
    "{%- set content = m['content'].split('</think>')[-1].lstrip('\n') %}"
    "{%- if loop.index0 > ns.last_query and '</think>' in m['content'] %}"
    "{%- set thought = m['content'].split('</think>')[0].split('<think>')[-1].strip('\n') %}"
    "<|im_start|>assistant\n<think>\n{{ thought }}\n</think>\n\n{{ content }}<|im_end|>\n"
    "{% else %}<|im_start|>assistant\n{{ content }}<|im_end|>\n{% endif %}"
    "{%- else %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endif %}"
    "{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"
)
MISTRAL = (
    "{{- bos_token }}{%- set ns = namespace(system='') %}"
    "{%- for m in messages %}"
    "{%- if m['role'] == 'system' %}{%- set ns.system = m['content'] + '\n\n' %}"
    "{%- elif m['role'] == 'assistant' %}{{ m['content'] }}{{ eos_token }}"
    "{%- else %}[INST] {{ ns.system }}{{ m['content'] }}[/INST]{%- set ns.system = '' %}"
    "{%- endif %}{%- endfor %}"
)
GEMMA = (
    "{{- bos_token }}{%- set ns = namespace(system='') %}"
    "{%- for m in messages %}"
    "{%- if m['role'] == 'system' %}{%- set ns.system = m['content'] + '\n\n' %}"
    "{%- else %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else 'user' }}\n"
    "{{ ns.system }}{{ m['content'] | trim }}<end_of_turn>\n{% set ns.system = '' %}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)

TEMPLATES: dict[str, dict[str, Any]] = {
    "llama3": {
        "template": LLAMA3,
        "bos": "<|begin_of_text|>",
        "eos": "<|eot_id|>",
        "special": ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
    },
    "chatml-qwen2.5": {"template": CHATML_QWEN25, "bos": None, "eos": "<|im_end|>", "special": []},
    "qwen3": {"template": QWEN3_THINKING, "bos": None, "eos": "<|im_end|>", "special": []},
    "mistral": {
        "template": MISTRAL,
        "bos": "<s>",
        "eos": "</s>",
        "special": ["<s>", "</s>", "[INST]", "[/INST]"],
    },
    "gemma": {
        "template": GEMMA,
        "bos": "<bos>",
        "eos": "<end_of_turn>",
        "special": ["<bos>", "<start_of_turn>", "<end_of_turn>"],
    },
}


def templated(tiny_model: Path, name: str) -> tuple[Any, Any]:
    """The tiny model and tokenizer with template ``name``'s special tokens and template."""
    import torch

    from agentgym.train.policy import load_model, load_tokenizer

    spec = TEMPLATES[name]
    tok = load_tokenizer(tiny_model)
    if spec["special"]:
        tok.add_special_tokens({"additional_special_tokens": spec["special"]})
    if spec["bos"]:
        tok.bos_token = spec["bos"]
    tok.eos_token = spec["eos"]
    tok.chat_template = spec["template"]
    torch.manual_seed(0)
    model = load_model(tiny_model)
    model.resize_token_embeddings(len(tok), mean_resizing=False)
    model.config.eos_token_id = tok.eos_token_id
    return model, tok


def save_templated(tiny_model: Path, name: str, out: Path) -> Path:
    """:func:`templated`, saved as a checkpoint folder."""
    model, tok = templated(tiny_model, name)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out
