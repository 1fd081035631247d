"""The single-agent text environment contract, as a Gymnasium base class.

Subclasses implement ``_reset(task)`` and ``_step(action)`` and keep every piece of mutable episode
state in ``self.state``; the base class resolves tasks, validates their config with the env's own
pydantic model, turns non-text actions into invalid-action observations, and gives snapshot/restore
for free.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium
import numpy as np
from pydantic import BaseModel

from agentgym.spaces import UnicodeText
from agentgym.task import Task, TaskSuite
from agentgym.traits import EnvTraits

_DEFAULTS = EnvTraits()

StepResult = tuple[str, float, bool, bool, dict[str, Any]]


class ResetNeeded(RuntimeError):
    """``step`` or ``expert_action`` was called before ``reset``."""


class NoExpert(NotImplementedError):
    """The env has no oracle policy."""


@dataclass(frozen=True)
class Snapshot:
    """Opaque copy of an env's episode state; pass it back to ``restore`` on an env of the same type."""

    env_type: type
    task: Task
    config: BaseModel
    state: Any
    rng_state: dict[str, Any]
    done: bool
    last_observation: str | None = None
    """What :meth:`TextEnv.render` showed; ``restore`` puts it back (None: not recorded)."""


class TextEnv(gymnasium.Env[str, str]):
    """Base class of single-agent agentgym environments (text in, text out)."""

    metadata = {"render_modes": ["ansi", "human"]}
    # set in ALL subclasses:
    config_model: ClassVar[type[BaseModel]]
    """Pydantic model that validates ``Task.config`` for this env."""
    system_prompt: ClassVar[str] = _DEFAULTS.system_prompt
    """How to act in this env (action syntax, goal); LLM agents use it as their system prompt.
    This and the other LLM-agent traits below are read through :func:`agentgym.traits.traits`,
    which documents each (:class:`~agentgym.traits.EnvTraits`)."""
    # set in SOME subclasses:
    default_suite: ClassVar[str | None] = _DEFAULTS.default_suite
    """Suite used when ``reset`` gets no task, or a task id instead of a Task."""
    free_text_actions: ClassVar[bool] = _DEFAULTS.free_text_actions
    """True where any non-empty text is a legitimate action (a message to a simulated user), so
    only structurally empty or broken strings count as malformed."""

    one_line_actions: ClassVar[bool] = _DEFAULTS.one_line_actions
    """True where every action is one line (a command, a query): LLM agents then stop generating
    at the first newline and need few tokens (``action_max_tokens``)."""
    action_max_tokens: ClassVar[int] = _DEFAULTS.action_max_tokens
    """Completion tokens an LLM agent needs for one action here (its default ``max_tokens``)."""
    own_sandbox: ClassVar[bool] = False
    """The env runs untrusted code in a sandbox of its own (Swe-v0): it cannot itself run inside
    one (``isolate=``), since sandboxes do not nest here."""
    demo_suite: ClassVar[str | None] = _DEFAULTS.demo_suite
    """A training split whose first task the expert plays for ``demonstration()``."""

    observation_space = UnicodeText(max_length=1 << 20)
    action_space = UnicodeText(max_length=1 << 14)

    def __init__(
        self, suite: str | TaskSuite | None = None, render_mode: str | None = None
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode {render_mode!r} is not supported; use one of {self.metadata['render_modes']}"
            )
        self.render_mode = render_mode
        self._suite = suite if isinstance(suite, TaskSuite) else None
        self.suite_name = (
            suite.name if isinstance(suite, TaskSuite) else suite or self.default_suite
        )
        self.task: Task | None = None
        self.config: Any = None
        self.state: Any = None
        self.done = False
        self.last_observation = ""

    # ------------------------------------------------------------------ subclass hooks
    @classmethod
    def validate_task(cls, task: Task) -> BaseModel:
        """Validate ``task.config`` (and, in envs that need it, ``task.gold``); return the config.

        Raises pydantic's ``ValidationError`` or ``ValueError`` naming the bad field.
        """
        return cls.config_model.model_validate(task.config)

    def _reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        """Start an episode of ``task`` (``self.config`` is already validated); return obs, info."""
        raise NotImplementedError

    def _step(self, action: str) -> StepResult:
        """Apply a text action. Never raise on bad input: return an observation saying what is allowed."""
        raise NotImplementedError

    def _rebuild(self, task: Task) -> None:
        """Rebuild what the env keeps outside ``self.state`` (lookups, compiled scenes, judges)
        from ``task``, ``self.config`` and ``self.state``: :meth:`restore` calls it after
        restoring a state and ``_reset`` where it needs them, so snapshots hold only the state."""

    def expert_action(self) -> str:
        """The oracle's next action in the current state."""
        raise NoExpert(f"{type(self).__name__} has no expert")

    def demonstration(self, turns: int = 2) -> list[dict[str, str]]:
        """The expert's first ``turns`` exchanges on the first task of ``demo_suite``, as chat
        messages: an in-context example of the action format for LLM agents (as ReAct shows
        ALFWorld agents solved games). Played on a fresh env of this type, never on this one's
        episode; empty where the env has no demo suite. Computed once per env type."""
        if self.demo_suite is None:
            return []
        env_type: Any = type(self)  # a class is hashable; mypy reads TextEnv's __hash__ as unbound
        return [dict(m) for m in _demonstration(env_type, self.demo_suite, turns)]

    # ------------------------------------------------------------------ gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.task = self._resolve_task((options or {}).get("task"))
        self.config = self.validate_task(self.task)
        self.done = False
        obs, info = self._reset(self.task)
        info = {"task_id": self.task.id, "instruction": self.task.instruction, **info}
        self.last_observation = obs
        return obs, info

    def step(self, action: str) -> StepResult:
        if self.task is None:
            raise ResetNeeded("call reset() before step()")
        if self.done:
            obs, reward, terminated, truncated, info = (
                "The episode is over; call reset() to start a new one.",
                0.0,
                True,
                False,
                {"valid": False},
            )
        elif not isinstance(action, str):
            obs, reward, terminated, truncated, info = self._step_invalid(
                f"Actions are text (str), got {type(action).__name__}."
            )
        else:
            obs, reward, terminated, truncated, info = self._step(action)
            info.setdefault("valid", True)
        self.done = terminated or truncated
        self.last_observation = obs
        return obs, float(reward), terminated, truncated, info

    def _step_invalid(self, message: str) -> StepResult:
        """Hook for non-text actions; envs with turn limits override to count the turn."""
        return message, 0.0, False, False, {"valid": False}

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self.last_observation
        if self.render_mode == "human":
            print(self.last_observation)
        return None

    # ------------------------------------------------------------------ branching
    def snapshot(self) -> Snapshot:
        """Copy of the episode state (task, state, RNG) to branch from later."""
        if self.task is None:
            raise ResetNeeded("call reset() before snapshot()")
        return Snapshot(
            type(self),
            self.task,
            _private(self.config),
            copy.deepcopy(self.state),
            copy.deepcopy(dict(self.np_random.bit_generator.state)),
            self.done,
            self.last_observation,
        )

    def restore(self, snapshot: Snapshot) -> None:
        """Return to a state taken by :meth:`snapshot`; the snapshot stays reusable."""
        self._check_snapshot(snapshot)
        self.task, self.done = snapshot.task, snapshot.done
        self.config = _private(snapshot.config)
        self.state = copy.deepcopy(snapshot.state)
        self.np_random.bit_generator.state = copy.deepcopy(snapshot.rng_state)
        self._rebuild(self.task)
        if snapshot.last_observation is not None:
            self.last_observation = snapshot.last_observation

    def _check_snapshot(self, snapshot: Snapshot) -> None:
        """A ``TypeError`` unless ``snapshot`` was taken from an env of this type."""
        if snapshot.env_type is not type(self):
            raise TypeError(
                f"snapshot of {snapshot.env_type.__name__} cannot restore {type(self).__name__}"
            )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Envs that write their own ``snapshot``/``restore`` keep the last observation too.

        Without this, an override that builds its ``Snapshot`` itself (or restores without
        ``super()``) left ``render()`` showing the text of the step after the snapshot.
        """
        super().__init_subclass__(**kwargs)
        if "snapshot" in cls.__dict__:
            cls.snapshot = _recording_observation(cls.__dict__["snapshot"])  # type: ignore[method-assign,assignment]
        if "restore" in cls.__dict__:
            cls.restore = _restoring_observation(cls.__dict__["restore"])  # type: ignore[method-assign,assignment]

    # ------------------------------------------------------------------ tasks
    @property
    def suite(self) -> TaskSuite:
        """The env's default task suite, loaded on first use."""
        if self._suite is None:
            if self.suite_name is None:
                raise ValueError(
                    f"{type(self).__name__} has no default suite: pass options={{'task': Task}}"
                )
            self._suite = TaskSuite.load(self.suite_name)
        return self._suite

    def _resolve_task(self, task: Task | dict[str, Any] | str | None) -> Task:
        return resolve_task(task, lambda: self.suite, self.np_random)


def resolve_task(
    task: Task | dict[str, Any] | str | None,
    suite: Callable[[], TaskSuite],
    rng: np.random.Generator,
) -> Task:
    """``options["task"]`` of any env as a Task: a Task, a dict, an id in ``suite()``, or None for
    a draw from ``suite()`` with ``rng`` (the suite is loaded only when an id or a draw needs it)."""
    if isinstance(task, Task):
        return task
    if isinstance(task, dict):
        return Task.model_validate(task)
    if isinstance(task, str):
        return suite()[task]
    if task is None:
        tasks = suite().tasks
        return tasks[int(rng.integers(len(tasks)))]
    raise TypeError(
        f"options['task'] must be a Task, a dict, a task id or None, got {type(task).__name__}"
    )


def _private(config: Any) -> Any:
    """A copy of ``config`` that the episode may keep: a frozen model is shared as it is (its
    identity keys caches such as Household's compiled scenes), anything else deep-copied."""
    frozen = isinstance(config, BaseModel) and config.model_config.get("frozen", False)
    return config if frozen else copy.deepcopy(config)


def _recording_observation(snapshot: Callable[[Any], Any]) -> Callable[[Any], Any]:
    @functools.wraps(snapshot)
    def wrapper(self: TextEnv) -> Any:
        snap = snapshot(self)
        if isinstance(snap, Snapshot) and snap.last_observation is None:
            snap = dataclasses.replace(snap, last_observation=self.last_observation)
        return snap

    return wrapper


def _restoring_observation(restore: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    @functools.wraps(restore)
    def wrapper(self: TextEnv, snapshot: Any) -> None:
        restore(self, snapshot)
        if isinstance(snapshot, Snapshot) and snapshot.last_observation is not None:
            self.last_observation = snapshot.last_observation

    return wrapper


@functools.cache
def _demonstration(
    env_type: type[TextEnv], suite: str, turns: int
) -> tuple[tuple[tuple[str, str], ...], ...]:
    env = env_type()
    task = TaskSuite.load(suite).tasks[0]
    obs, _ = env.reset(seed=0, options={"task": task})
    messages: list[tuple[tuple[str, str], ...]] = []
    for _ in range(turns):
        action = env.expert_action()
        messages += [
            (("role", "user"), ("content", obs)),
            (("role", "assistant"), ("content", action)),
        ]
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    return tuple(messages)


def card(line: str, base: type) -> str:
    """The docstring of an env that shares ``base``'s doc card: its own ``line``, then the card,
    so ``help(EnvClass)`` shows the card on every registered class (as Gymnasium's envs do)."""
    return f"{line}\n\n{inspect.cleandoc(base.__doc__ or '')}"
