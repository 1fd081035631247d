"""What an agent program trained with ``rollout.harness`` reads and reports: one episode.

The trainer runs the program once per episode (``rollout.harness: "python my_agent.py"``) with
``AGENTGYM_EPISODE`` naming a JSON file: the gateway's OpenAI base URL, the session id to send as
the request's ``user`` field, the model name, how to sample, and the env (id, options, task and
seed). The program plays the episode with any client (OpenAI SDK, LiteLLM, raw HTTP)::

    from agentgym.harness import HarnessEpisode

    episode = HarnessEpisode.from_environ()  # the env is made and reset here, in this process
    client = openai.OpenAI(base_url=episode.base_url, api_key="agentgym")
    while not episode.done:
        reply = client.chat.completions.create(
            model=episode.model, messages=..., user=episode.session, **episode.sampling
        )
        episode.step(action_from(reply))  # the env's own reward and observation
    episode.finish()  # writes the env's rewards and outcome for the trainer

The reward the trainer trains on is what the env returned to :meth:`HarnessEpisode.step`; the
tokens it trains on are those the gateway recorded for the session, never text the program sends.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from agentgym.episode import Episode, Step
from agentgym.traits import traits

ENV_VAR = "AGENTGYM_EPISODE"


class HarnessEpisode:
    """One episode of an env, made in this process from the trainer's episode file."""

    def __init__(self, spec: dict[str, Any]) -> None:
        from agentgym.registry import make
        from agentgym.task import Task

        self.spec = spec
        self.base_url: str = spec["base_url"]
        self.session: str = spec["session"]
        self.model: str = spec["model"]
        self.sampling: dict[str, Any] = dict(spec["sampling"])
        """Keyword arguments for ``chat.completions.create``: max_tokens, temperature, top_p, stop."""
        self.max_turns: int = int(spec["max_turns"])
        self.task = Task.model_validate(spec["task"])
        self.env: Any = make(spec["env_id"], **spec.get("env_kwargs", {}))
        self.system_prompt: str = traits(self.env).system_prompt
        self.record = Episode(
            task_id=self.task.id,
            env_id=spec["env_id"],
            seed=int(spec["seed"]),
            started_at=time.time(),
        )
        """What the env returned, recorded as every episode loop records it."""
        self.observation, self.info = self.env.reset(
            seed=int(spec["seed"]), options={"task": self.task}
        )
        self.record.instruction = str(self.info.get("instruction", ""))
        self.record.first_observation = self.observation
        self.done = False

    @classmethod
    def from_environ(cls) -> HarnessEpisode:
        """The episode the trainer gave this process (``$AGENTGYM_EPISODE``)."""
        path = os.environ.get(ENV_VAR)
        if not path:
            raise SystemExit(
                f"{ENV_VAR} is not set: this program is run by the trainer's rollout.harness"
            )
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def request_seed(self, turn: int) -> int | None:
        """A seed for the request of ``turn``, from the episode's: the trainer's own rollouts and
        ``agentgym eval`` seed their turns so (``agentgym.llm.sampling.turn_seed``)."""
        from agentgym.llm.sampling import turn_seed

        return turn_seed(int(self.spec["seed"]), turn)

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        """The env's tools as OpenAI tool schemas, if it has any."""
        return self.info.get("tools") or None

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Step the env; the episode is :attr:`done` when it ends or reaches ``max_turns``."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.record.record_step(action, obs, float(reward), bool(terminated), bool(truncated), info)
        self.observation, self.info = obs, info
        self.done = self.record.ended or len(self.record.steps) >= self.max_turns
        return obs, float(reward), bool(terminated), bool(truncated), info

    @property
    def steps(self) -> list[Step]:
        """The steps played so far."""
        return self.record.steps

    def finish(self) -> None:
        """Write the episode's record for the trainer (the file the episode spec names): an
        episode the env did not end stopped at ``max_turns``."""
        if not self.record.ended:
            self.record.status = "limit"
        self.record.duration_s = time.time() - self.record.started_at
        Path(self.spec["result"]).write_text(self.record.model_dump_json(), encoding="utf-8")
        self.env.close()
