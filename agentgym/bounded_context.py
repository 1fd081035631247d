"""A bounded context: the task, the last K steps, the current observation and the admissible
actions, as one user message rebuilt every turn (verl-agent's ALFWorld prompt).

A long episode's linear chat grows with every turn; a 135M model cannot read 40 turns of a
full-size room. Here the prompt's length is bounded whatever the turn: the policy sees what
verl-agent's ``ALFWORLD_TEMPLATE`` shows, worded for a one-line reply (no ``<think>`` block).
The chat agent (``hf:PATH?history=K``), the trainer's rollouts (``rollout.history``) and the
demonstration rows of ``agents/context.py`` (``play_rows``) all build the prompt here, so training
and ``agentgym eval`` see the same text.

*Notes* (``?notes=NAME``, ``rollout.notes``) add one line the agent's harness rebuilds every turn
from the episode's own observations and actions: state that scrolled out of the last K steps
(Household's ``household``: where the agent is, what it holds, the task's things there and where
it saw others, which receptacles it has not visited). They are a function of the text the agent was shown,
nothing more, registered by name (:data:`NOTES`) by whoever ships them: the household notes by
``envs/`` when it registers its envs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym.plugins import Registry

Notes = Callable[[Sequence[str], Sequence[str]], str]
"""(observations, actions) -> one line of notes; ``observations`` has one more (the current)."""


NOTES: Registry[Notes] = Registry("bounded-context notes", "agentgym.notes")
"""Notes by name: ``NOTES.register(name, notes or "module:function")`` (an env plug-in's registrar
does it beside its envs), or one entry point of the group ``agentgym.notes``."""


def check_notes(name: str | None) -> str | None:
    """``name`` if notes of that name are registered (None: no notes); a clear error otherwise."""
    if name is not None and NOTES.find(name) is None:
        raise ValueError(f"unknown notes {name!r}; registered: {', '.join(NOTES.names())}")
    return name


def bounded_prompt(
    task: str,
    observations: Sequence[str],
    actions: Sequence[str],
    admissible: Sequence[str] | None,
    history: int,
    notes: str | None = None,
) -> str:
    """The user message of the next step.

    ``observations[i]`` was answered by ``actions[i]``; the last observation (one more than the
    actions) is the current one. ``history`` past steps are shown (0: none); ``admissible`` None
    leaves the action list out (envs that do not list their commands); ``notes``, a line of
    notes, goes just before the current observation.
    """
    if len(observations) != len(actions) + 1:
        raise ValueError(
            f"need one more observation than actions (the last is the current one); got "
            f"{len(observations)} observations and {len(actions)} actions"
        )
    if history < 0:
        raise ValueError(f"history must be >= 0 past steps, got {history}")
    step = len(actions)
    lines = [f"Your task is to: {task}"]
    first = max(0, step - history)
    if step and history:
        lines.append(
            f"Prior to this step, you have taken {step} step(s). "
            f"Your last {step - first} step(s), each an observation and your action:"
        )
        lines += [
            f"[Observation {i + 1}: {observations[i]!r}, Action {i + 1}: {actions[i]!r}]"
            for i in range(first, step)
        ]
    if notes:
        lines.append(notes)
    lines.append(f"You are now at step {step + 1}. Current observation: {observations[-1]}")
    if admissible is not None:
        lines.append(f"Admissible actions: [{', '.join(admissible)}].")
    lines.append("Reply with one admissible action only.")
    return "\n".join(lines)


@dataclass
class BoundedHistory:
    """One episode's text as the bounded prompt needs it; fed turn by turn."""

    history: int
    notes: str | None = None
    """A name in :data:`NOTES`; None: no notes line."""
    task: str = ""
    observations: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_notes(self.notes)

    def start(self, task: str) -> None:
        self.task, self.observations, self.actions = task, [], []

    def prompt(self, observation: str, info: dict[str, Any]) -> str:
        """Record the observation (and ``info["available_actions"]``); the next step's prompt."""
        self.observations.append(observation)
        notes = NOTES.get(self.notes)(self.observations, self.actions) if self.notes else None
        return bounded_prompt(
            self.task,
            self.observations,
            self.actions,
            info.get("available_actions"),
            self.history,
            notes,
        )

    def acted(self, action: str) -> None:
        self.actions.append(action)

    def stalled(self) -> bool:
        """The last two steps are the same: one command, answered twice with the same text (the
        current observation is the second answer)."""
        return (
            len(self.actions) >= 2
            and self.actions[-1] == self.actions[-2]
            and self.observations[-1] == self.observations[-2]
        )

    @classmethod
    def maybe(cls, history: int | None, notes: str | None = None) -> BoundedHistory | None:
        """A bounded context of ``history`` steps, or None (the linear chat) for None."""
        return None if history is None else cls(history, notes)
