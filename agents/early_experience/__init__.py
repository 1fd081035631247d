"""Early experience (Zhang et al., 2025): learn from the future states of your own alternative actions.

No reward is used. From expert trajectories, at every expert state the env is snapshotted, K
alternative actions are executed in the real env (``env.snapshot()``/``restore()``) and the next
state each produced is recorded. Two data sets follow (docs/methods.md):

- **Implicit world modelling (IWM)**: predict the next state from (state, action); a next-token
  loss on the next observation's text, with the same parameters as the policy.
- **Self-reflection (SR)**: a rationale explaining why the expert action beats the alternative,
  grounded in the two observed next states, followed by the expert action; mixed with the
  expert data. The rationale comes from any callable (:func:`chat_reflector` over any chat model)
  or, offline, :func:`template_reflector`. :func:`shuffle_rationales` is the ungrounded control.

Rows are OpenAI chat-format JSONL (``{"messages": [...]}``), the format ``agentgym train`` reads as
``sft.data``. The context before the target turn is the expert's own history; its assistant
turns carry ``"weight": 0`` (OpenAI's fine-tuning convention) so only the target is trained;
the trainer's SFT data reader honours the weights (:func:`agentgym.train.sft.from_messages`).

Choices not fixed by the paper (documented options): alternatives come from a proposer callable;
the default :func:`available_actions_proposer` samples the env's ``available_actions`` (the
"initial policy" of an untrained agent; placeholder actions such as ``search[<keywords>]`` are
skipped, so WebShop's search page gets no alternatives); the state is the full expert history.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.task import Task

Message = dict[str, Any]
Proposer = Callable[[str, dict[str, Any], str, int, random.Random], list[str]]
"""(observation, info, expert action, K, rng) -> up to K alternative actions."""
IWM_PROMPT = "Predict the observation that follows the action: {action}"
SR_FORMAT = "Thought: {rationale}\nAction: {action}"
_PLACEHOLDER = re.compile(r"\[<[^\]]*>\]")


@dataclass(frozen=True)
class Branch:
    """One executed action from an expert state, and what the env answered."""

    action: str
    observation: str
    reward: float
    done: bool
    valid: bool


@dataclass
class ExpertState:
    """An expert state s_i, the expert's action a_i and the branched alternatives a_i^j."""

    t: int
    observation: str
    expert: Branch
    alternatives: list[Branch] = field(default_factory=list)


@dataclass
class Trajectory:
    """An expert episode with the branches taken at every state."""

    task_id: str
    instruction: str
    first_observation: str
    states: list[ExpertState] = field(default_factory=list)
    success: bool = False

    def history(self, i: int) -> list[tuple[str, str]]:
        """(action, observation) pairs the expert took before state ``i``."""
        return [(s.expert.action, s.expert.observation) for s in self.states[:i]]


# ============================================================================ branching
def available_actions_proposer(
    observation: str, info: dict[str, Any], expert: str, k: int, rng: random.Random
) -> list[str]:
    """K distinct actions from ``info["available_actions"]``, never the expert's, no placeholders."""
    pool = [
        a
        for a in info.get("available_actions", [])
        if a.strip().lower() != expert.strip().lower() and not _PLACEHOLDER.search(a)
    ]
    return rng.sample(pool, min(k, len(pool)))


def _branch(env: Any, action: str) -> Branch:
    obs, reward, terminated, truncated, info = env.step(action)
    return Branch(
        action, obs, float(reward), terminated or truncated, bool(info.get("valid", True))
    )


def collect(
    env: Any,
    tasks: Iterable[Task],
    k: int = 3,
    proposer: Proposer = available_actions_proposer,
    seed: int = 0,
    max_steps: int | None = None,
) -> list[Trajectory]:
    """Run the expert on every task; at each state execute ``k`` alternatives from a snapshot."""
    if k < 0:
        raise ValueError(f"k (alternatives per state) must be >= 0, got {k}")
    base = env.unwrapped
    out = []
    for task in tasks:
        rng = random.Random(f"{seed}:{task.id}")
        obs, info = env.reset(seed=seed, options={"task": task})
        traj = Trajectory(task.id, task.instruction, obs)
        for t in itertools.count() if max_steps is None else range(max_steps):
            snap = base.snapshot()
            expert = base.expert_action()
            alternatives = []
            for action in proposer(obs, info, expert, k, rng):
                base.restore(snap)
                alternatives.append(_branch(env, action))
            base.restore(snap)
            obs, reward, terminated, truncated, info = env.step(expert)
            done = terminated or truncated
            traj.states.append(
                ExpertState(t, _last(traj), Branch(expert, obs, reward, done, True), alternatives)
            )
            if done:
                traj.success = bool(info.get("success", False))
                break
        out.append(traj)
    return out


def _last(traj: Trajectory) -> str:
    return traj.states[-1].expert.observation if traj.states else traj.first_observation


# ============================================================================ reflection
Reflector = Callable[[Trajectory, ExpertState, Branch], str]
"""(trajectory, state, alternative) -> a one-paragraph rationale for the expert action."""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _differing(a: str, b: str) -> tuple[str, str]:
    """The two texts without their common leading words (pages that repeat the instruction)."""
    wa, wb = a.split(), b.split()
    n = 0
    while n < min(len(wa), len(wb)) - 1 and wa[n] == wb[n]:
        n += 1
    return " ".join(wa[n:]), " ".join(wb[n:])


def template_reflector(limit: int = 160) -> Reflector:
    """A deterministic offline reflector grounded in the two observed next states."""

    def reflect(traj: Trajectory, state: ExpertState, alt: Branch) -> str:
        mine, other = _differing(state.expert.observation, alt.observation)
        return (
            f"If I chose {alt.action}, the result would be: {_clip(other, limit)} "
            f"With {state.expert.action} the result is: {_clip(mine, limit)} "
            f"That brings me closer to the goal ({_clip(traj.instruction, limit)}), "
            f"so I choose {state.expert.action}."
        )

    return reflect


def chat_reflector(client: Any, temperature: float = 0.0, max_tokens: int = 256) -> Reflector:
    """Rationales written by any chat model (``agentgym.llm.make_client(spec)``)."""
    from agentgym.llm.base import ChatRequest

    def reflect(traj: Trajectory, state: ExpertState, alt: Branch) -> str:
        prompt = (
            f"Goal: {traj.instruction}\nCurrent observation: {state.observation}\n\n"
            f"Action A: {state.expert.action}\nResult of A: {state.expert.observation}\n\n"
            f"Action B: {alt.action}\nResult of B: {alt.observation}\n\n"
            "In a few sentences, using the two results, explain why A is the better next "
            "action toward the goal. Do not name them A and B; refer to the actions themselves."
        )
        request = ChatRequest(
            messages=[{"role": "user", "content": prompt}],
            temperature=temperature,
            max_tokens=max_tokens,
        )
        return " ".join(client.complete(request).text.split())

    return reflect


# ============================================================================ rows
def _context(traj: Trajectory, i: int, system: str, last: str | None = None) -> list[Message]:
    """System prompt, the first observation and the expert's turns before state ``i``."""
    msgs: list[Message] = [{"role": "system", "content": system}] if system else []
    msgs.append({"role": "user", "content": traj.first_observation})
    for action, observation in traj.history(i):
        msgs += [
            {"role": "assistant", "content": action, "weight": 0},
            {"role": "user", "content": observation},
        ]
    if last is not None:
        msgs[-1] = {"role": "user", "content": last}
    return msgs


def imitation_rows(trajectories: Iterable[Trajectory], system: str = "") -> list[dict[str, Any]]:
    """Plain expert data: one chat per successful trajectory, every action trained."""
    rows = []
    for traj in trajectories:
        if not traj.success:
            continue
        msgs = _context(traj, len(traj.states) - 1, system)
        msgs.append({"role": "assistant", "content": traj.states[-1].expert.action})
        for m in msgs:
            m.pop("weight", None)
        rows.append({"messages": msgs, "task_id": traj.task_id, "kind": "imitation"})
    return rows


def iwm_rows(trajectories: Iterable[Trajectory], system: str = "") -> list[dict[str, Any]]:
    """(state, alternative action) -> the next state it produced, one row per branch."""
    rows = []
    for traj in trajectories:
        for i, state in enumerate(traj.states):
            for alt in state.alternatives:
                ask = f"{state.observation}\n\n{IWM_PROMPT.format(action=alt.action)}"
                msgs = _context(traj, i, system, last=ask)
                msgs.append({"role": "assistant", "content": alt.observation})
                rows.append({"messages": msgs, "task_id": traj.task_id, "kind": "iwm"})
    return rows


def sr_rows(
    trajectories: Iterable[Trajectory], reflector: Reflector, system: str = ""
) -> list[dict[str, Any]]:
    """State -> rationale (expert vs one alternative) + expert action, one row per branch."""
    rows = []
    for traj in trajectories:
        for i, state in enumerate(traj.states):
            for alt in state.alternatives:
                rationale = " ".join(reflector(traj, state, alt).split())
                target = SR_FORMAT.format(rationale=rationale, action=state.expert.action)
                msgs = _context(traj, i, system)
                msgs.append({"role": "assistant", "content": target})
                rows.append({"messages": msgs, "task_id": traj.task_id, "kind": "sr", "t": state.t})
    return rows


def rationale_of(row: dict[str, Any]) -> str:
    """The rationale of an SR row (the text between ``Thought:`` and the action line)."""
    content = row["messages"][-1]["content"]
    match = re.match(r"Thought: (.*)\nAction: ", content, re.DOTALL)
    if match is None:
        raise ValueError(f"not an SR row (its target does not start with 'Thought:'): {content!r}")
    return match.group(1)


def shuffle_rationales(rows: Sequence[dict[str, Any]], seed: int = 0) -> list[dict[str, Any]]:
    """The control: each SR row gets another row's rationale (a derangement), same actions."""
    if len(rows) < 2:
        raise ValueError("shuffling rationales needs at least two SR rows")
    rng = random.Random(seed)
    order = list(range(len(rows)))
    while any(i == j for i, j in enumerate(order)):
        rng.shuffle(order)
    out = []
    for row, j in zip(rows, order, strict=True):
        last = row["messages"][-1]["content"]
        action = last.split("\nAction: ", 1)[1]
        target = SR_FORMAT.format(rationale=rationale_of(rows[j]), action=action)
        out.append(
            {**row, "messages": [*row["messages"][:-1], {**row["messages"][-1], "content": target}]}
        )
    return out


def write_rows(rows: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write chat rows as JSONL; return how many."""
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


# ============================================================================ schedules
def train_phases(cfg: Any, phases: Sequence[tuple[str, int]], console: Any = None) -> Path:
    """SFT phases in order, each from the previous one's final weights; returns the last final.

    ``phases`` is ``[(rows.jsonl, steps), ...]``: the paper's IWM schedule is
    ``[(iwm, k), (imitation, total - k)]`` (about one IWM epoch, then imitation, total steps equal
    to imitation alone); SR is one phase over SR rows mixed with imitation rows. Each phase starts
    a fresh optimiser (its state is not carried over).
    """
    from agentgym.train.trainer import Trainer

    model, root = cfg.model.path, Path(cfg.out_dir)
    for n, (data, steps) in enumerate(phases):
        phase = cfg.model_copy(deep=True)
        phase.model.path, phase.sft.data, phase.steps = str(model), data, steps
        phase.algo.name, phase.out_dir = "sft", str(root / f"phase-{n}")
        trainer = Trainer(phase, console)
        try:
            trainer.run()
        finally:
            trainer.close()
        model = Path(phase.out_dir) / "final"
    return Path(model)
