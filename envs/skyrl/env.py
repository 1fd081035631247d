"""skyrl-gym's offline built-in envs (``gsm8k``, ``gsm8k_multi_turn``) as one env class,
:class:`SkyRLGymEnv`."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from agentgym.env import ResetNeeded, StepResult, TextEnv
from agentgym.extras import require
from agentgym.task import Task

NAMESPACE = "skyrl"

BUILTIN: dict[str, str] = {
    # skyrl-gym id: one line for `agentgym envs`
    "gsm8k": "skyrl-gym's GSM8K env: one answer, graded '#### N' (SkyRL-gym)",
    "gsm8k_multi_turn": "skyrl-gym's multi-turn GSM8K env: up to 5 tries, per-turn reward (SkyRL-gym)",
}

_ANSWER = re.compile(r"#### (\-?[0-9\.\,]+)")
"""skyrl-gym's strict GSM8K answer form (``skyrl_gym.envs.gsm8k.utils.extract_solution``)."""


class SkyRLRow(BaseModel):
    """``Task.config``: one SkyRL dataset row (what ``skyrl_gym.make``'s env gets)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    prompt: list[dict[str, str]] = Field(min_length=1)
    """The chat prompt (OpenAI messages) the policy starts from."""
    extras: dict[str, Any]
    """The row's extras, with ``reward_spec.ground_truth``."""


class SkyRLGymEnv(TextEnv):
    """A skyrl-gym built-in env on one SkyRL dataset row, run by skyrl-gym's own env class.

    =====================  =========================================================================
    Ids                    ``skyrl/gsm8k``, ``skyrl/gsm8k_multi_turn`` (``pip install ".[skyrl]"``)
    Class                  :class:`agentgym.envs.skyrl.env.SkyRLGymEnv` (``skyrl_env=...``)
    Actions                free text ending in skyrl-gym's answer form ``#### N``; an action without
                           it is invalid (``valid`` False) but still graded by the env, as SkyRL does
    Observations           text: the row's prompt messages, then the env's user messages
    Reward                 the env's: 1 for a correct answer, else 0; ``gsm8k_multi_turn`` rewards
                           every turn and gives a well-formed wrong answer 0.2 / 5. ``success`` =
                           the last reward is 1, ``score`` the same as 0/1
    Episode end            the env's ``done``: one answer (``gsm8k``), or a correct one or 5 tries
                           (``gsm8k_multi_turn``)
    Splits                 ``skyrl/gsm8k``, ``skyrl/gsm8k_multi_turn``: 20 generated two-step
                           arithmetic problems each (GSM8K itself is not bundled;
                           :func:`agentgym.envs.skyrl.generate.task_from_row` converts its rows)
    Expert                 ``expert_action()``: the ground truth as ``#### N`` (100% success)
    Regenerate             ``python -m agentgym.envs.skyrl.generate``
    =====================  =========================================================================

    Config (``Task.config``, validated by :class:`SkyRLRow`): ``prompt`` (OpenAI messages) and
    ``extras`` with ``reward_spec.ground_truth``. skyrl-gym's other built-ins need what is not
    offline: ``search``/``searchcode`` a retrieval server, ``text2sql`` its database files, ``lcb``
    LiveCodeBench and a code sandbox, ``aime`` its dataset.
    """

    config_model: ClassVar[type[BaseModel]] = SkyRLRow
    free_text_actions = True
    action_max_tokens = 512

    def __init__(
        self, skyrl_env: str = "gsm8k", suite: Any = None, render_mode: str | None = None
    ) -> None:
        if skyrl_env not in BUILTIN:
            raise ValueError(
                f"skyrl_env {skyrl_env!r} is not wrapped; use one of {', '.join(BUILTIN)}"
            )
        super().__init__(suite or f"{NAMESPACE}/{skyrl_env}", render_mode)
        self.skyrl_env = skyrl_env

    def _reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        require("SkyRL-gym envs", "skyrl_gym")
        import skyrl_gym

        env = skyrl_gym.make(self.skyrl_env, env_config={}, extras=dict(self.config.extras))
        prompt, _ = env.init([dict(m) for m in self.config.prompt])
        self.state = {"env": env, "last_reward": 0.0}
        return _text(prompt), {}

    def _step(self, action: str) -> StepResult:
        out = self.state["env"].step(action)
        reward, done = float(out["reward"]), bool(out["done"])
        self.state["last_reward"] = reward
        info: dict[str, Any] = {"valid": _ANSWER.search(action) is not None}
        if done:
            info |= {"success": reward >= 1.0, "score": 1.0 if reward >= 1.0 else 0.0}
        text = _text(out["observations"]) or ("Answer graded." if done else "")
        return text, reward, done, False, info

    def _step_invalid(self, message: str) -> StepResult:
        """A non-text action is graded as an empty answer: the turn counts, as in SkyRL."""
        obs, reward, terminated, truncated, info = self._step("")
        return f"{message} {obs}".strip(), reward, terminated, truncated, info | {"valid": False}

    def expert_action(self) -> str:
        if self.task is None:
            raise ResetNeeded("call reset() before expert_action()")
        return f"#### {self.config.extras['reward_spec']['ground_truth']}"


def _text(messages: list[dict[str, Any]]) -> str:
    return "\n\n".join(str(m.get("content") or "") for m in messages).strip()
