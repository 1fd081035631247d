"""A plain OpenAI-SDK tool-calling agent, trained as it is with ``rollout.harness``.

Nothing here comes from agentgym's own agent: the prompt is the env's system prompt and the
conversation, the tools are passed as OpenAI tools, a tool call is answered by a ``tool`` message
and anything else the model says goes to the (simulated) user. Run by the trainer::

    agentgym train -c configs/harness_tools.yaml   # rollout.harness: "python examples/harnesses/openai_tools.py"

or against any recording server by hand (``agentgym serve MODEL --record calls.db``), with an
episode file of your own (see ``agentgym.harness``).
"""

from __future__ import annotations

import json

import openai

from agentgym.harness import HarnessEpisode


def main() -> None:
    episode = HarnessEpisode.from_environ()
    client = openai.OpenAI(
        base_url=episode.base_url,
        api_key="agentgym",
        max_retries=0,
        default_headers=episode.headers,  # the gateway files calls under the episode's session
    )
    messages: list[dict] = [
        {"role": "system", "content": episode.system_prompt},
        {"role": "user", "content": episode.observation},
    ]
    turn = 0
    while not episode.done:
        reply = client.chat.completions.create(
            model=episode.model,
            messages=messages,
            tools=episode.tools,
            seed=episode.request_seed(turn),
            **episode.sampling,
        )
        message = reply.choices[0].message
        if message.tool_calls:
            call = message.tool_calls[0]
            try:
                arguments = json.loads(call.function.arguments or "{}")
            except json.JSONDecodeError:
                arguments = call.function.arguments
            action = json.dumps({"name": call.function.name, "arguments": arguments})
            observation, *_ = episode.step(action)
            messages.append(
                {"role": "assistant", "content": message.content, "tool_calls": [call.model_dump()]}
            )
            messages.append({"role": "tool", "tool_call_id": call.id, "content": observation})
        else:
            text = message.content or ""
            observation, *_ = episode.step(text)
            messages.append({"role": "assistant", "content": text})
            messages.append({"role": "user", "content": observation})
        turn += 1
    episode.finish()


if __name__ == "__main__":
    main()
