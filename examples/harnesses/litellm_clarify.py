"""A LiteLLM agent for Clarify (20 questions over products and movies), trained as it is with
``rollout.harness: "python examples/harnesses/litellm_clarify.py"``.

Its own prompt and parsing, none of agentgym's agent: it keeps only the last few exchanges (so
the gateway sees its history cut, and each call trains as its own row), and it sends the first
``ask[...]`` or ``answer[...]`` of the reply as the action.
"""

from __future__ import annotations

import os
import re

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm is imported

import litellm  # noqa: E402

from agentgym.harness import HarnessEpisode  # noqa: E402

KEEP_EXCHANGES = 3
ACTION = re.compile(r"(ask|answer)\[[^\]\n]*\]")
PROMPT = (
    "You are playing 20 questions. Ask yes/no questions as ask[attribute=value] and end with "
    "answer[item id]. Reply with one action and nothing else."
)


def main() -> None:
    episode = HarnessEpisode.from_environ()
    head = [
        {"role": "system", "content": PROMPT},
        {"role": "user", "content": episode.observation},
    ]
    exchanges: list[dict] = []
    turn = 0
    while not episode.done:
        reply = litellm.completion(
            model=f"openai/{episode.model}",
            api_base=episode.base_url,
            api_key="agentgym",
            messages=head + exchanges[-2 * KEEP_EXCHANGES :],
            extra_headers=episode.headers,  # the episode's session and its key
            seed=episode.request_seed(turn),
            **episode.sampling,
        )
        text = reply.choices[0].message.content or ""
        found = ACTION.search(text)
        observation, *_ = episode.step(found.group(0) if found else text.strip())
        exchanges += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": observation},
        ]
        turn += 1
    episode.finish()


if __name__ == "__main__":
    main()
