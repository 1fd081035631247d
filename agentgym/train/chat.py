"""The token pieces of a chat, from any tokenizer's chat template: prompt, actions, observations.

Rendering a whole conversation and tokenising it again after every turn would let BPE merge
across turn boundaries and change ids the policy already sampled. Instead the prompt is rendered
once, and every later observation is wrapped in the template's own between-turn text (for ChatML
``<|im_end|>\\n<|im_start|>user\\n{obs}<|im_end|>\\n<|im_start|>assistant\\n``) and tokenised on its
own. The pieces are found by rendering a conversation with sentinel strings and cutting at them,
so any Hugging Face chat template works.

Some templates rewrite history: a turn renders differently once later turns follow it (Qwen3
drops an earlier reply's ``<think>`` block; a reasoning template opens ``<think>`` in the
generation prompt but not in the replies it re-reads). Then the earlier prompt and sample are not a
prefix of the later prompt, one growing sequence would train the model on contexts it never
reads, and :attr:`ChatFormat.rewrites_history` is True: the rollouts render every turn's prompt
afresh from the chat and each turn trains as its own row.
"""

from __future__ import annotations

from typing import Any

_A, _U = "\x00ACTION\x00", "\x00OBSERVATION\x00"
_THOUGHT = "<think>\nx\n</think>\n\nA"
"""A reply with a reasoning block: templates that rewrite history drop or move it."""


class ChatFormat:
    """Prompt, observation and expert-action token ids for one tokenizer."""

    def __init__(self, tokenizer: Any, system_prompt: bool = True) -> None:
        self.tokenizer = tokenizer
        self.use_system_prompt = system_prompt
        self.eos_id: int = tokenizer.eos_token_id
        self.eos_text: str = tokenizer.eos_token or ""
        text = tokenizer.apply_chat_template(
            [
                {"role": "user", "content": "x"},
                {"role": "assistant", "content": _A},
                {"role": "user", "content": _U},
            ],
            tokenize=False,
            add_generation_prompt=True,
        )
        after_action = text.split(_A, 1)[1]
        self.before_obs, self.after_obs = after_action.split(_U, 1)
        """Template text between an action and the next observation, and after it."""
        self.rewrites_history = _rewrites_history(tokenizer)
        """Whether a turn renders differently once later turns follow it (see the module doc)."""
        if not self.before_obs.startswith(self.eos_text):
            raise ValueError(
                "the chat template must close an assistant turn with the tokenizer's EOS token "
                f"{self.eos_text!r}; it writes {self.before_obs[:20]!r}"
            )

    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` without added special tokens (special-token strings stay special)."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt(self, system: str, observation: str) -> list[int]:
        """Ids of the first prompt: system prompt (if any and enabled), first observation."""
        messages = [{"role": "user", "content": observation}]
        if system and self.use_system_prompt:
            messages.insert(0, {"role": "system", "content": system})
        ids = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True
        )
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)

    def render(self, messages: list[dict[str, Any]]) -> list[int]:
        """Ids of a whole chat with the generation prompt, as ``agentgym eval``'s agent sends it
        (a template that rewrites history renders every turn's prompt this way)."""
        text = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=False
        )
        return self.encode(str(text))

    def observation(self, text: str, action_ended_with_eos: bool) -> list[int]:
        """Ids of an observation turn after an action; the EOS is here only if not sampled."""
        head = self.before_obs[len(self.eos_text) :] if action_ended_with_eos else self.before_obs
        return self.encode(head + text + self.after_obs)

    def action(self, text: str) -> list[int]:
        """Ids of an action written by someone else (an expert, SFT data), ending with EOS."""
        return self.encode(text) + [self.eos_id]


def _rewrites_history(tokenizer: Any) -> bool:
    """True if a chat's prompt plus a reply is not a prefix of the chat's next prompt."""
    first = [{"role": "user", "content": "x"}]
    reply = {"role": "assistant", "content": _THOUGHT}
    before = tokenizer.apply_chat_template(first, tokenize=False, add_generation_prompt=True)
    after = tokenizer.apply_chat_template(
        [*first, reply, {"role": "user", "content": "y"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    return not str(after).startswith(str(before) + _THOUGHT)
