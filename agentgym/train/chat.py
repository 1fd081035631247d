"""The token pieces of a chat, from any tokenizer's chat template: prompt, actions, observations.

Rendering a whole conversation and tokenising it again after every turn would let BPE merge
across turn boundaries and change ids the policy already sampled. Instead the prompt is rendered
once, and every later observation is wrapped in the template's own between-turn text (for ChatML
``<|im_end|>\\n<|im_start|>user\\n{obs}<|im_end|>\\n<|im_start|>assistant\\n``) and tokenised on its
own. The pieces are found by rendering a conversation with sentinel strings and cutting at them,
so any Hugging Face chat template works.
"""

from __future__ import annotations

from typing import Any

_A, _U = "\x00ACTION\x00", "\x00OBSERVATION\x00"


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

    def observation(self, text: str, action_ended_with_eos: bool) -> list[int]:
        """Ids of an observation turn after an action; the EOS is here only if not sampled."""
        head = self.before_obs[len(self.eos_text) :] if action_ended_with_eos else self.before_obs
        return self.encode(head + text + self.after_obs)

    def action(self, text: str) -> list[int]:
        """Ids of an action written by someone else (an expert, SFT data), ending with EOS."""
        return self.encode(text) + [self.eos_id]
