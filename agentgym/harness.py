"""What an agent program trained with ``rollout.harness`` reads and reports: one episode.

The trainer runs the program once per episode (``rollout.harness: "python my_agent.py"``) with
``AGENTGYM_EPISODE`` naming a JSON file in the episode's private folder: the gateway's OpenAI
base URL, the session id and its secret key to send as headers (:attr:`HarnessEpisode.headers`),
the model name, how to sample, and the env's first observation, info, system prompt and traits.
The program plays the episode with any client (OpenAI SDK, LiteLLM, raw HTTP)::

    from agentgym.harness import HarnessEpisode

    episode = HarnessEpisode.from_environ()
    client = openai.OpenAI(
        base_url=episode.base_url, api_key="agentgym", default_headers=episode.headers
    )
    while not episode.done:
        reply = client.chat.completions.create(
            model=episode.model, messages=..., **episode.sampling
        )
        episode.step(action_from(reply))  # the env's own reward and observation
    episode.finish()

The env lives in the trainer: :meth:`HarnessEpisode.step` sends the action to the gateway, and
the trainer steps the env and records its answer. The program never holds the task (its gold
answer stays in the trainer), and the reward the trainer trains on is the env's, from its own
record; the tokens are those the gateway recorded for the session, never text the program sends.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from agentgym.llm.recording import KEY_HEADER, SESSION_HEADER

ENV_VAR = "AGENTGYM_EPISODE"
STEP_TIMEOUT_S = 600.0
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
"""The gateway is local: no proxy a variable names sits between."""


class HarnessError(RuntimeError):
    """The trainer refused a step (the episode is over, the session or key is wrong)."""


class HarnessEpisode:
    """One episode as the trainer gave it to this program; its env steps in the trainer."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.base_url: str = spec["base_url"]
        self.session: str = spec["session"]
        self.headers: dict[str, str] = {SESSION_HEADER: spec["session"], KEY_HEADER: spec["key"]}
        """Send these with every request: the session's id and the key that binds it."""
        self.model: str = spec["model"]
        self.sampling: dict[str, Any] = dict(spec["sampling"])
        """Keyword arguments for ``chat.completions.create``: max_tokens, temperature, top_p, stop."""
        self.max_turns: int = int(spec["max_turns"])
        self.seed: int = int(spec["seed"])
        self.system_prompt: str = str(spec.get("system_prompt", ""))
        self.free_text_actions: bool = bool(spec.get("free_text_actions", False))
        """The env takes any text as an action (no ``Action:`` line to parse)."""
        self.workdir = Path(spec["workdir"]) if spec.get("workdir") else None
        """This episode's private folder (mode 0700, removed after the episode)."""
        self.observation: str = spec["observation"]
        self.info: dict[str, Any] = dict(spec.get("info") or {})
        self.done = False
        self.turns = 0
        """Steps played."""

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

        return turn_seed(self.seed, turn)

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        """The env's tools as OpenAI tool schemas, if it has any."""
        return self.info.get("tools") or None

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Have the trainer step the env; the episode is :attr:`done` when it ends or reaches
        ``max_turns``."""
        answer = self._post("step", {"action": action})
        self.observation, self.info = answer["observation"], answer["info"]
        self.done, self.turns = bool(answer["done"]), self.turns + 1
        return (
            answer["observation"],
            float(answer["reward"]),
            bool(answer["terminated"]),
            bool(answer["truncated"]),
            answer["info"],
        )

    def finish(self) -> None:
        """Tell the trainer the program is done (an episode the env did not end is a ``limit``)."""
        self._post("finish", {})
        self.done = True

    def _post(self, verb: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.base_url}/agentgym/{verb}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", **self.headers},
        )
        try:
            with _DIRECT.open(request, timeout=STEP_TIMEOUT_S) as response:
                return dict(json.loads(response.read()))
        except urllib.error.HTTPError as e:
            message = json.loads(e.read() or b"{}").get("error", {}).get("message", str(e))
            raise HarnessError(f"the trainer refused {verb}: {message}") from None
