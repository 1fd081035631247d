"""KBQA-R1: Referenced Rejection Sampling (RRS), a scripted noisy teacher, and the training recipe.

RRS (Sun et al., 2025) fixes the cold start of multi-turn RL on a KB: compile each training
question's gold logical form into a reference action sequence, put it in a teacher's prompt as a
hint, roll the teacher out in the live KB, keep the trajectories whose answer matches gold, then
drop the hint so the SFT data look like unaided reasoning. :func:`rrs` does this for any teacher
built by a ``(env, hint) -> Agent`` factory (an LLM chat agent with the hint in its system prompt,
or :class:`NoisyTeacher` offline); ``hint=""`` gives plain rejection sampling, the baseline.

The env is duck-typed (``env.unwrapped.reference_actions()`` after ``reset``, ``info`` keys
``entities`` or ``entity_refs``, ``relations``, ``result_ref``), so this module imports no env.
With the KBQA env's ``handles`` option the teacher writes topic entities as ``@1``/``@2``.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentgym.agent import Agent
from agentgym.episode import Episode
from agentgym.export import to_chat
from agentgym.rollout import rollout
from agentgym.task import Task

TeacherFactory = Callable[[Any, str], Agent]
"""Builds a teacher for one episode from the env and the hint ("" = no hint)."""
HINT_HEADER = "Reference action sequence"
HINT_MARKERS = (HINT_HEADER, "reference action", "the reference", "the hint")
"""Phrases that betray the hint; an episode containing any of them is never kept."""


def make_hint(actions: Sequence[str]) -> str:
    """The hint put into a teacher's prompt: the numbered reference actions."""
    steps = "\n".join(f"{i + 1}. {a}" for i, a in enumerate(actions))
    return (
        f"{HINT_HEADER} (a correct solution; result numbers may shift if you take other "
        f"actions; reason as if you found it yourself and never mention it):\n{steps}"
    )


def hint_steps(hint: str) -> list[str]:
    """The actions listed in a hint made by :func:`make_hint`."""
    return re.findall(r"^\d+\. (.+)$", hint, re.MULTILINE)


# ---------------------------------------------------------------------------- sampling
@dataclass
class RRSReport:
    """Outcome of one sampling run: yields overall and per tag, and the accepted episodes."""

    hinted: bool
    attempted: int = 0
    accepted: int = 0
    leaked: int = 0
    """Accepted by the answer but dropped because the trajectory mentions the hint."""
    errors: int = 0
    tasks: int = 0
    covered: set[str] = field(default_factory=set)
    """Task ids with at least one kept trajectory."""
    by_tag: dict[str, Counter[str]] = field(default_factory=dict)
    episodes: list[Episode] = field(default_factory=list)

    @property
    def yield_rate(self) -> float:
        """Kept trajectories per rollout."""
        return self.accepted / self.attempted if self.attempted else 0.0

    def tag_yield(self, tag: str) -> float:
        """Kept trajectories per rollout among tasks carrying ``tag``."""
        c = self.by_tag.get(tag, Counter())
        return c["accepted"] / c["attempted"] if c["attempted"] else 0.0


def accept_min_f1(threshold: float = 1.0) -> Callable[[Episode], bool]:
    """Acceptance: the episode ended with an answer whose F1 is at least ``threshold``."""
    return lambda ep: ep.status == "completed" and ep.score >= threshold


def rrs(
    env: Any,
    tasks: Iterable[Task],
    teacher: TeacherFactory,
    *,
    samples: int = 4,
    hinted: bool = True,
    accept: Callable[[Episode], bool] | None = None,
    seed: int = 0,
    max_steps: int | None = None,
) -> RRSReport:
    """Roll ``teacher`` out ``samples`` times per task with (or, ``hinted=False``, without) the hint."""
    keep = accept or accept_min_f1()
    report = RRSReport(hinted=hinted)
    for task in tasks:
        report.tasks += 1
        env.reset(seed=seed, options={"task": task})
        hint = make_hint(env.unwrapped.reference_actions()) if hinted else ""
        for k in range(samples):
            episode = rollout(
                env,
                teacher(env, hint),
                task,
                seed=_seed(seed, task.id, k),
                sample=k,
                max_steps=max_steps,
            )
            _record(report, task, episode, keep(episode), hint)
    return report


def _record(report: RRSReport, task: Task, episode: Episode, good: bool, hint: str) -> None:
    report.attempted += 1
    report.errors += episode.status == "error"
    leaked = good and bool(hint) and leaks(episode, hint)
    report.leaked += leaked
    kept = good and not leaked
    for tag in ["all", *task.tags]:
        counter = report.by_tag.setdefault(tag, Counter())
        counter["attempted"] += 1
        counter["accepted"] += kept
    if kept:
        report.accepted += 1
        report.covered.add(task.id)
        report.episodes.append(episode)


def _seed(seed: int, task_id: str, sample: int) -> int:
    digest = hashlib.sha256(f"{seed}:{task_id}:{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def leaks(episode: Episode, hint: str) -> bool:
    """Whether any text of the episode contains the hint or a phrase that refers to it."""
    texts = [episode.first_observation, *(s.action for s in episode.steps)]
    texts += [s.observation for s in episode.steps]
    lowered = [t.lower() for t in texts]
    return any(hint in t for t in texts) or any(
        m.lower() in t for m in HINT_MARKERS for t in lowered
    )


# ---------------------------------------------------------------------------- SFT data
def sft_rows(episodes: Iterable[Episode], system_prompt: str) -> list[dict[str, Any]]:
    """Chat-format SFT rows (``agentgym.export.to_chat``) under the plain, hint-free prompt."""
    return [to_chat(ep, system_prompt) for ep in episodes]


def write_sft(episodes: Iterable[Episode], path: Path, system_prompt: str) -> int:
    """Write :func:`sft_rows` as JSONL; return how many rows."""
    rows = sft_rows(episodes, system_prompt)
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(rows)


# ---------------------------------------------------------------------------- scripted teacher
class NoisyTeacher:
    """An offline teacher: follows the hint with per-step errors, or explores without one.

    With a hint, each step is taken as written (renumbered onto this episode's results) except
    that with probability ``p_error`` it is corrupted (another relation, the other direction, the
    wrong operator...); after a corrupted step it notices and redoes the step with probability
    ``p_recover``, else carries on from the wrong result. Without a hint it explores: it lists
    the relations of its current result, follows a random one, and answers after one to three hops
    (counting first with probability ``p_count``). Turns use KBQA-R1's tagged format.
    """

    def __init__(
        self,
        env: Any,
        hint: str = "",
        p_error: float = 0.15,
        p_recover: float = 0.5,
        p_count: float = 0.2,
    ) -> None:
        self.env = env
        self.steps = hint_steps(hint)
        self.p_error, self.p_recover, self.p_count = p_error, p_recover, p_count
        self.relations: list[str] = list(env.unwrapped.kb.relation_names())

    def reset(self, info: dict[str, Any]) -> None:
        self.rng = random.Random(info.get("seed"))
        self.entities: list[str] = list(info.get("entity_refs", info.get("entities", [])))
        self.mapping: dict[str, str] = {}
        self.pos = 0
        self.pending: tuple[str, int] | None = None
        self.current = self.entities[0] if self.entities else ""
        self.hops = 0
        self.target_hops = self.rng.randint(1, 3)
        self.counted = False

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self._follow(info) if self.steps else self._explore(info)

    # -------------------------------------------------------------- with a hint
    def _follow(self, info: dict[str, Any]) -> str:
        self._advance(info)
        step = re.sub(
            r"#\d+", lambda m: self.mapping.get(m.group(0), m.group(0)), self.steps[self.pos]
        )
        if self.rng.random() < self.p_error:
            wrong = self._corrupt(step)
            if wrong != step:
                redo = self.rng.random() < self.p_recover
                self.pending = ("redo" if redo else "wrong", self.pos)
                return _turn(wrong, _thought(wrong))
        self.pending = ("step", self.pos)
        return _turn(step, _thought(step))

    def _advance(self, info: dict[str, Any]) -> None:
        """Record what the previous action produced; move on unless it is to be redone."""
        if self.pending is None:
            return
        kind, i = self.pending
        self.pending = None
        if kind == "redo" or (kind == "step" and not info.get("valid", True)):
            return
        if "result_ref" in info:
            self.mapping[f"#{i}"] = info["result_ref"]
        self.pos = min(self.pos + 1, len(self.steps) - 1)

    def _corrupt(self, step: str) -> str:
        """A plausible mistake on ``step``."""
        op, _, rest = step.partition("[")
        args = [a.strip() for a in rest.rstrip("]").split("|")]
        if op == "Find_relation":
            other = self.rng.choice([r for r in self.relations if r != args[1].lstrip("~")])
            flip = args[1][1:] if args[1].startswith("~") else f"~{args[1]}"
            args[1] = self.rng.choice([flip, other, f"~{other}"])
        elif op == "Order":
            args[0] = "MIN" if args[0] == "MAX" else "MAX"
        elif op == "Compare":
            args[0] = self.rng.choice([o for o in ("lt", "le", "gt", "ge") if o != args[0]])
        elif op == "Time_constraint":
            args[1] = re.sub(r"\d{4}", lambda m: str(int(m.group(0)) + 10), args[1])
        elif op in ("Merge", "Count", "Answer") and self.mapping:
            args[0] = self.rng.choice(sorted(self.mapping.values()))
        return f"{op}[{' | '.join(args)}]"

    # -------------------------------------------------------------- without a hint
    def _explore(self, info: dict[str, Any]) -> str:
        if "result_ref" in info:
            self.current, self.hops = info["result_ref"], self.hops + 1
        if self.counted:
            return _turn(f"Answer[{self.current}]", "That count answers the question.")
        if self.hops >= self.target_hops or (self.hops and info.get("relations") == []):
            if self.rng.random() < self.p_count:
                self.counted = True
                return _turn(f"Count[{self.current}]", f"I count {self.current}.")
            return _turn(f"Answer[{self.current}]", f"{self.current} should answer the question.")
        if info.get("relations"):
            relation = self.rng.choice(info["relations"])
            return _turn(f"Find_relation[{self.current} | {relation}]", f"I follow {relation}.")
        return _turn(f"Get_relations[{self.current}]", f"Which relations does {self.current} have?")


def _thought(action: str) -> str:
    """A short rationale for an action, in words that never refer to a hint."""
    op, _, rest = action.partition("[")
    args = [a.strip() for a in rest.rstrip("]").split("|")] + ["", ""]
    args = args[: max(3, len(args) - 2)]
    return {
        "Find_relation": f"I follow {args[1]} from {args[0]}.",
        "Merge": f"I keep what {args[0]} and {args[1]} have in common.",
        "Order": f"I take the {args[0].lower()} of {args[1]} by {args[2]}.",
        "Compare": f"I need the entities whose {args[1]} is {args[0]} {args[2]}.",
        "Time_constraint": f"I restrict {args[0]} to {args[1]}.",
        "Count": f"I count {args[0]}.",
        "Answer": f"{args[0]} answers the question.",
    }.get(op, "Next step.")


def _turn(action: str, think: str) -> str:
    match = re.fullmatch(r"Answer\[(.*)\]", action, re.DOTALL)
    body = f"<answer>{match.group(1)}</answer>" if match else f"<action>{action}</action>"
    return f"<think>{think}</think>{body}"


def noisy_teacher(p_error: float = 0.15, p_recover: float = 0.5) -> TeacherFactory:
    """A :data:`TeacherFactory` of :class:`NoisyTeacher` with these error rates."""
    return lambda env, hint: NoisyTeacher(env, hint, p_error=p_error, p_recover=p_recover)


# ---------------------------------------------------------------------------- recipe
class KBQAR1Recipe(BaseModel):
    """KBQA-R1's training recipe after RRS-SFT, for the trainer to read (docs/methods.md)."""

    group_size: int = 5
    """GRPO samples per question."""
    kl_coef: float = 0.0
    clip_low: float = 0.2
    clip_high: float = 0.28
    max_turns: int = 6
    mask_observations: bool = True
    """Environment (``<information>``) tokens carry no loss."""
    format_bonus: float = 0.1
    """Paid by the env on top of F1 when F1 > 0 and the tagged format held."""
