"""SkyRL-gym both ways: any agentgym env as a skyrl-gym env, and skyrl-gym's offline built-in
envs (``gsm8k``, ``gsm8k_multi_turn``) as agentgym envs (``agentgym.make("skyrl/gsm8k")``).

Into SkyRL: :func:`register_skyrl` registers :class:`AgentgymSkyRLEnv` in skyrl-gym's registry
(id ``agentgym``); ``skyrl_gym.make("agentgym", extras={"env_id": ..., "task": ...})`` builds it,
and SkyRL's ``init``/``step`` loop plays our env: the prompt is the env's system prompt and first
observation, each step's observation comes back as a user message, the reward is the env's.

Into agentgym: :class:`SkyRLGymEnv` runs skyrl-gym's own env class on a task whose config holds the
SkyRL dataset row (``prompt`` messages and ``extras`` with ``reward_spec``). The other built-ins
need what is not offline: ``search``/``searchcode`` a retrieval server, ``text2sql`` its database
files, ``lcb`` LiveCodeBench and a code sandbox, ``aime`` its dataset.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from agentgym.env import ResetNeeded, StepResult, TextEnv
from agentgym.extras import require
from agentgym.task import Task, write_manifest, write_tasks
from agentgym.traits import traits

NAMESPACE = "skyrl"
SKYRL_ID = "agentgym"
"""The id :func:`register_skyrl` gives agentgym envs in skyrl-gym's registry."""

BUILTIN: dict[str, str] = {
    # skyrl-gym id: one line for `agentgym envs`
    "gsm8k": "skyrl-gym's GSM8K env: one answer, graded '#### N' (SkyRL-gym)",
    "gsm8k_multi_turn": "skyrl-gym's multi-turn GSM8K env: up to 5 tries, per-turn reward (SkyRL-gym)",
}

_ANSWER = re.compile(r"#### (\-?[0-9\.\,]+)")
"""skyrl-gym's strict GSM8K answer form (``skyrl_gym.envs.gsm8k.utils.extract_solution``)."""


def _require() -> None:
    require("SkyRL-gym envs", "skyrl_gym")


# ------------------------------------------------------------------ their envs in agentgym
class SkyRLRow(BaseModel):
    """``Task.config``: one SkyRL dataset row (what ``skyrl_gym.make``'s env gets)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    prompt: list[dict[str, str]] = Field(min_length=1)
    """The chat prompt (OpenAI messages) the policy starts from."""
    extras: dict[str, Any]
    """The row's extras, with ``reward_spec.ground_truth``."""


class SkyRLGymEnv(TextEnv):
    """A skyrl-gym built-in env on one dataset row. Observations are the prompt's and the env's
    user messages as text; the reward is the env's; ``success`` = the last step's reward is 1
    (a correct answer); ``score`` the same as 0/1. An action without skyrl-gym's ``#### N`` answer
    is invalid (``valid`` False) but still graded by the env, as SkyRL does. Expert: the ground
    truth in that form."""

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
        _require()
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


# ------------------------------------------------------------------ agentgym envs in SkyRL
def _skyrl_base() -> type:
    _require()
    from skyrl_gym.envs.base_text_env import BaseTextEnv

    return BaseTextEnv


def skyrl_env_class() -> type:
    """The skyrl-gym ``BaseTextEnv`` subclass that plays agentgym envs, built on first use so
    this module imports without skyrl-gym."""
    global _SKYRL_CLASS
    if _SKYRL_CLASS is None:
        _SKYRL_CLASS = _build_skyrl_class(_skyrl_base())
    return _SKYRL_CLASS


_SKYRL_CLASS: type | None = None


def _build_skyrl_class(base: type) -> type:
    class AgentgymEnv(base):  # type: ignore[misc,valid-type]
        """An agentgym env behind skyrl-gym's ``BaseTextEnv`` (``skyrl_gym.make("agentgym",
        extras={...})``). ``extras``: ``env_id`` (required), ``task`` (a task id in the env's
        suite, or a task dict; None draws one), ``seed``, ``max_turns`` (default 50),
        ``env_kwargs``."""

        def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
            super().__init__()
            from agentgym.registry import make

            extras = dict(extras or {})
            if "env_id" not in extras:
                raise ValueError("extras['env_id'] is required: the agentgym env id to play")
            self.env = make(extras["env_id"], **dict(extras.get("env_kwargs") or {}))
            self.task = extras.get("task")
            self.seed = extras.get("seed")
            self.max_turns = int(extras.get("max_turns", 50))
            self.final: dict[str, Any] = {}

        def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
            """SkyRL's dataset prompt is ignored: the episode's prompt is the env's own."""
            obs, info = self.env.reset(seed=self.seed, options={"task": self.task})
            system = traits(self.env).system_prompt
            head = [{"role": "system", "content": system}] if system else []
            return head + [{"role": "user", "content": obs}], {"task_id": info["task_id"]}

        def step(self, action: str) -> dict[str, Any]:
            self.turns += 1
            obs, reward, terminated, truncated, info = self.env.step(action)
            done = bool(terminated or truncated or self.turns >= self.max_turns)
            if done:
                self.final = {k: info[k] for k in ("success", "score") if k in info}
            return {
                "observations": [] if done else [{"role": "user", "content": obs}],
                "reward": float(reward),
                "done": done,
                "metadata": _json_safe(info),
                "postprocessed_action": None,
            }

        def get_metrics(self) -> dict[str, Any]:
            return {"turns": self.turns, **{k: float(v) for k, v in self.final.items()}}

        def close(self) -> None:
            self.env.close()

    AgentgymEnv.__name__ = AgentgymEnv.__qualname__ = "AgentgymSkyRLEnv"
    return AgentgymEnv


def make_agentgym_skyrl_env(**kwargs: Any) -> Any:
    """skyrl-gym's entry point for :data:`SKYRL_ID` (``env_config``, ``extras``)."""
    return skyrl_env_class()(**kwargs)


def register_skyrl(id: str = SKYRL_ID) -> str:
    """Register agentgym's envs in skyrl-gym's registry as ``id``; returns it. Idempotent."""
    _require()
    import skyrl_gym

    if id not in skyrl_gym.registry:
        skyrl_gym.register(id=id, entry_point=make_agentgym_skyrl_env)
    return id


def _json_safe(info: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in info.items():
        try:
            json.dumps(v)
        except (TypeError, ValueError):
            v = repr(v)
        out[k] = v
    return out


# ------------------------------------------------------------------ registry and suites
def register_envs() -> None:
    """Register ``skyrl/<id>`` for each wrapped built-in (``agentgym.envs`` entry point)."""
    from agentgym.registry import register

    for name, line in BUILTIN.items():
        register(f"{NAMESPACE}/{name}", f"{__name__}:SkyRLGymEnv", {"skyrl_env": name}, line)


INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'
"""The GSM8K instruction of SkyRL's own dataset script (examples/gsm8k/gsm8k_dataset.py)."""


def arithmetic_rows(n: int, seed: int = 0) -> list[tuple[str, int]]:
    """``n`` two-step arithmetic word problems and their answers (seeded): GSM8K-shaped rows for
    tests and smoke runs; a real GSM8K file converts with :func:`task_from_row`."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        boxes, per, eaten = rng.randint(3, 12), rng.randint(4, 15), rng.randint(1, 20)
        rows.append(
            (
                f"A shop has {boxes} boxes with {per} apples in each box. It sells {eaten} apples. "
                "How many apples are left?",
                boxes * per - eaten,
            )
        )
    return rows


def task_from_row(
    env: str, task_id: str, question: str, answer: str | int, split: str = "test"
) -> Task:
    """One agentgym task from a GSM8K question and answer, as SkyRL's dataset script builds rows."""
    prompt = [{"role": "user", "content": f"{question} {INSTRUCTION}"}]
    extras = {"reward_spec": {"method": "rule", "ground_truth": str(answer)}}
    if env == "gsm8k_multi_turn":
        extras["max_turns"] = 5
    return Task(
        id=task_id,
        env=f"{NAMESPACE}/{env}",
        split=split,
        instruction=question,
        config={"prompt": prompt, "extras": extras},
        tags=["skyrl", "arithmetic"],
    )


def write_suites(out: Path, n: int = 20) -> dict[str, Any]:
    """Write ``<env>.jsonl`` for every wrapped built-in and the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for env in BUILTIN:
        tasks = [
            task_from_row(env, f"arith-{i}", q, a) for i, (q, a) in enumerate(arithmetic_rows(n))
        ]
        counts[env] = write_tasks(out / f"{env}.jsonl", tasks)
    return write_manifest(
        out,
        {
            "generator": "python -m agentgym.integrations.skyrl_gym",
            "source": "generated two-step arithmetic word problems (seed 0) in SkyRL's GSM8K row "
            "format; GSM8K itself is not bundled",
            "suites": counts,
        },
    )


if __name__ == "__main__":
    from importlib import resources

    print(write_suites(Path(str(resources.files("agentgym.tasks"))) / NAMESPACE))
