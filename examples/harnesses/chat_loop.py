"""An agent program that plays as the trainer's own rollouts do, over the OpenAI API.

System prompt and first observation, then each turn: one request (seeded by the episode's seed
and the turn), the action parsed from the reply as the trainer parses it, the reply and the next
observation appended. Run by ``rollout.harness: "python examples/harnesses/chat_loop.py"``, or
called in process with an episode spec (:func:`play`).
"""

from __future__ import annotations

from typing import Any

import openai

from agentgym.chat_agent import FormatError, parse_action
from agentgym.harness import HarnessEpisode


def play(spec: dict[str, Any] | None = None) -> None:
    episode = HarnessEpisode(spec) if spec is not None else HarnessEpisode.from_environ()
    client = openai.OpenAI(
        base_url=episode.base_url,
        api_key="agentgym",
        max_retries=0,
        default_headers=episode.headers,  # the episode's session and its key
    )
    system = [{"role": "system", "content": episode.system_prompt}] if episode.system_prompt else []
    messages = [*system, {"role": "user", "content": episode.observation}]
    free_text = episode.free_text_actions
    turn = 0
    while not episode.done:
        reply = client.chat.completions.create(
            model=episode.model,
            messages=messages,
            seed=episode.request_seed(turn),
            **episode.sampling,
        )
        text = reply.choices[0].message.content or ""
        try:
            action = parse_action({"role": "assistant", "content": text}, free_text)
        except FormatError:
            action = text
        observation, *_ = episode.step(action)
        messages += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": observation},
        ]
        turn += 1
    episode.finish()


if __name__ == "__main__":
    play()
