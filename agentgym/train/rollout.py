"""Batched, token-exact multi-turn rollouts with the policy being trained.

All episodes of a rollout batch are in flight together: each turn, the running token ids of every
active episode go to the engine as one batch (``Engine.generate_batch``), the sampled ids
and their logprobs are appended as generated, actions are parsed from the sampled text
(:func:`agentgym.chat_agent.parse_action`), the env pool steps them all, and each observation is
appended as the chat template's observation turn (a template that rewrites earlier turns,
``ChatFormat.rewrites_history``, gets every turn's prompt rendered afresh from the chat instead,
and each turn trains as its own row). Env failures end that episode with
``status="error"``; they never end the batch.

With an :class:`AdapterPicker` (a policy with several adapters, ``model.policy``), each turn first
picks one adapter for every active episode from its instruction and observations, then generates
once per adapter for the episodes it picked; each turn records its adapter and the picker's record.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentgym.bounded_context import BoundedHistory
from agentgym.chat_agent import FormatError, parse_action
from agentgym.episode import Episode, Usage
from agentgym.llm.sampling import SamplingSpec, derive_seed, turn_seed  # noqa: F401 (re-exported)
from agentgym.rewards import RewardError
from agentgym.task import Task
from agentgym.train.chat import ChatFormat
from agentgym.train.envpool import EnvPool, Outcome
from agentgym.train.episode import TokenEpisode, Turn

if TYPE_CHECKING:
    from agentgym.train.config import RolloutConfig


@dataclass(frozen=True)
class Job:
    """One episode to roll out: a task, its group, which sample of the group, the env seed."""

    task: Task
    group: str
    sample: int
    seed: int


@dataclass
class RolloutStats:
    """Throughput of one rollout batch."""

    episodes: int = 0
    generated_tokens: int = 0
    prompt_tokens: int = 0
    generate_s: float = 0.0
    env_s: float = 0.0
    wall_s: float = 0.0

    @property
    def episodes_per_s(self) -> float:
        return self.episodes / self.wall_s if self.wall_s else 0.0

    @property
    def tokens_per_s(self) -> float:
        """Generated tokens per second of wall time."""
        return self.generated_tokens / self.wall_s if self.wall_s else 0.0


class AdapterPicker(Protocol):
    """Which adapter generates each turn, picked before it is generated (the rollout side of a
    policy with several adapters; why it picks one is the policy's business)."""

    def start(self, instruction: str) -> Any:
        """The picker's state of a new episode with this instruction."""
        ...

    def pick(self, states: Sequence[Any], observations: Sequence[str]) -> list[tuple[int, Any]]:
        """Per episode, the adapter of its next turn and a record kept on the turn
        (``Turn.adapter_record``); updates ``states``."""
        ...

    def use(self, adapter: int) -> None:
        """Make ``adapter`` the one that generates."""
        ...


@dataclass
class _Live:
    """Scratch state of one in-flight episode (not part of the record)."""

    ep: TokenEpisode
    last_observation: str = ""
    action_start: int = 0
    gen: Any = None
    pick_state: Any = None
    pick: tuple[int, Any] | None = None
    """This turn's adapter and the picker's record of it."""
    bounded: BoundedHistory | None = None
    context_start: int = 0
    """Where the prompt of the next action starts in ``ep.ids`` (> 0 only with a bounded context
    or a chat template that rewrites history)."""
    messages: list[dict[str, str]] | None = None
    """The chat so far, where the template rewrites history (every prompt is rendered afresh)."""
    version: int | None = None
    """The policy version generating this turn (None: the caller stamps the rollout after)."""


def collect(
    engine: Any,
    chat: ChatFormat,
    pool: EnvPool,
    jobs: list[Job],
    rollout: RolloutConfig,
    sampling: SamplingSpec,
    seed: int,
    picker: AdapterPicker | None = None,
    between_turns: Callable[[], int] | None = None,
) -> tuple[list[TokenEpisode], RolloutStats]:
    """Roll out every job to the end; return the episodes in job order and the throughput.

    ``rollout`` bounds the episodes (``max_turns``, ``max_context_tokens``) and shapes their
    prompts (``history``, ``notes``); ``sampling`` draws every action: resolved for the env
    (the trainer's: ``rollout.for_env(env)``, at its eval temperature for held-out runs).
    ``between_turns``, where given, runs before every turn's generation (an asynchronous
    sampler swaps in newer weights there) and returns the policy version that generates the
    turn, stamped on it; an episode may then span versions.
    """
    stats, started = RolloutStats(episodes=len(jobs)), time.perf_counter()
    live = [_Live(_new_episode(job, pool)) for job in jobs]
    t0 = time.perf_counter()
    resets = pool.reset([(job.task, job.seed) for job in jobs])
    stats.env_s += time.perf_counter() - t0
    for lv, out in zip(live, resets, strict=True):
        lv.bounded = BoundedHistory.maybe(rollout.history, rollout.notes)
        _start(lv, out, chat, pool.system_prompt)
        if picker is not None and lv.ep.ok:
            lv.pick_state = picker.start(lv.ep.episode.instruction)
    active = [i for i, lv in enumerate(live) if lv.ep.ok]
    for turn in range(rollout.max_turns):
        active = [i for i in active if _fits(live[i], sampling, rollout.max_context_tokens)]
        if not active:
            break
        if picker is not None:
            _pick(picker, live, active)
        version = between_turns() if between_turns is not None else None
        for i in active:
            live[i].version = version
        seeds = {i: _seed(jobs[i], turn) for i in active}
        actions = _act(engine, live, active, sampling, seeds, stats, pool, picker)
        t0 = time.perf_counter()
        outcomes = pool.step(actions)
        stats.env_s += time.perf_counter() - t0
        for i in active:
            _record(live[i], actions[i], outcomes[i], chat)
        active = [i for i in active if not live[i].ep.episode.ended]
    for i in active:  # turn or context limit
        live[i].ep.episode.status = "limit"
    for lv in live:
        _finish(lv.ep)
    stats.wall_s = time.perf_counter() - started
    return [lv.ep for lv in live], stats


def _new_episode(job: Job, pool: EnvPool) -> TokenEpisode:
    env_id = getattr(pool, "env_id", "")
    record = Episode(
        task_id=job.task.id, env_id=env_id, sample=job.sample, seed=job.seed, started_at=time.time()
    )
    return TokenEpisode(episode=record, group=job.group)


def _start(lv: _Live, out: Outcome, chat: ChatFormat, system: str) -> None:
    ep = lv.ep
    if out.error is not None:
        ep.episode.fail(out.error)
        return
    ep.episode.instruction = str(out.info.get("instruction", ""))
    ep.episode.first_observation = out.observation
    if lv.bounded is not None:
        lv.bounded.start(ep.episode.instruction)
        ep.extend(chat.prompt("", lv.bounded.prompt(out.observation, out.info)), mask=0)
    elif chat.rewrites_history:
        use_system = system and chat.use_system_prompt
        lv.messages = [{"role": "system", "content": system}] if use_system else []
        lv.messages.append({"role": "user", "content": out.observation})
        ep.extend(chat.render(lv.messages), mask=0)
        ep.per_call = True
    else:
        ep.extend(chat.prompt(system, out.observation), mask=0)
    ep.prompt_len = len(ep.ids)
    lv.last_observation = out.observation


def _fits(lv: _Live, sampling: SamplingSpec, max_context_tokens: int) -> bool:
    length = len(lv.ep.ids) - lv.context_start
    return length + (sampling.max_tokens or 0) <= max_context_tokens


def _act(
    engine: Any,
    live: list[_Live],
    active: list[int],
    sampling: SamplingSpec,
    seeds: dict[int, int],
    stats: RolloutStats,
    pool: EnvPool,
    picker: AdapterPicker | None = None,
) -> dict[int, str]:
    """Batched generation for all active episodes; append the samples; parse the actions."""
    t0 = time.perf_counter()
    if picker is None:
        gens = _generate(engine, [_context(live[i]) for i in active], sampling, active, seeds)
    else:  # one generation batch per adapter, each episode with the adapter picked for it
        by_adapter: dict[int, list[int]] = {}
        for i in active:
            by_adapter.setdefault(_adapter(live[i]), []).append(i)
        generated: dict[int, Any] = {}
        for adapter, members in sorted(by_adapter.items()):
            picker.use(adapter)
            prompts = [_context(live[i]) for i in members]
            out = _generate(engine, prompts, sampling, members, seeds)
            generated.update(zip(members, out, strict=True))
        gens = [generated[i] for i in active]
    stats.generate_s += time.perf_counter() - t0
    actions: dict[int, str] = {}
    for i, gen in zip(active, gens, strict=True):
        lv = live[i]
        stats.generated_tokens += len(gen.token_ids)
        stats.prompt_tokens += len(lv.ep.ids) - lv.context_start
        lv.action_start, lv.gen = len(lv.ep.ids), gen
        lv.ep.extend(list(gen.token_ids), mask=1, logprobs=list(gen.logprobs))
        message = {"role": "assistant", "content": gen.text}
        try:
            actions[i] = parse_action(message, pool.free_text_actions)
        except FormatError:
            actions[i] = gen.text  # the env says what is wrong, as for any malformed action
    return actions


def _context(lv: _Live) -> list[int]:
    """The ids the next action is generated from (the turn's own prompt if bounded)."""
    return lv.ep.ids[lv.context_start :]


def _seed(job: Job, turn: int) -> int:
    """A request's seed from its job's seed (derived from the run seed, the task and the sample)
    and the turn alone, so an episode samples the same text in any batch; ``agentgym eval``'s
    agent seeds its turns the same way from its episode seed (``turn_seed``)."""
    return turn_seed(job.seed, turn) or 0


def _generate(
    engine: Any,
    prompts: list[list[int]],
    sampling: SamplingSpec,
    slots: list[int],
    seeds: dict[int, int],
) -> list[Any]:
    return list(
        engine.generate_batch(prompts, sampling, seeds=[seeds[i] for i in slots], keep_eos=True)
    )


def _pick(picker: AdapterPicker, live: list[_Live], active: list[int]) -> None:
    """Pick the adapter of every active episode's next turn."""
    picks = picker.pick(
        [live[i].pick_state for i in active], [live[i].last_observation for i in active]
    )
    for i, pick in zip(active, picks, strict=True):
        live[i].pick = pick


def _adapter(lv: _Live) -> int:
    if lv.pick is None:
        raise RuntimeError("no adapter picked for this turn")
    return int(lv.pick[0])


def _record(lv: _Live, action: str, out: Outcome, chat: ChatFormat) -> None:
    ep, start, gen = lv.ep, lv.action_start, lv.gen
    end = len(ep.ids)
    state_key = lv.last_observation
    adapter, record = (None, None) if lv.pick is None else (_adapter(lv), lv.pick[1])
    context = lv.context_start
    if out.error is not None:
        ep.episode.fail(out.error)
        ep.turns.append(
            Turn(start, end, end, end, 0.0, state_key, adapter, record, context, lv.version)
        )
        return
    done = out.terminated or out.truncated
    if not done and lv.bounded is not None:  # the next turn's own prompt, after this action
        lv.bounded.acted(action)
        lv.context_start = end
        ep.extend(chat.prompt("", lv.bounded.prompt(out.observation, out.info)), mask=0)
    elif not done and lv.messages is not None:  # the template rewrites history: render afresh
        lv.messages += [
            {"role": "assistant", "content": gen.text},
            {"role": "user", "content": out.observation},
        ]
        lv.context_start = end
        ep.extend(chat.render(lv.messages), mask=0)
    elif not done:
        ended_with_eos = bool(gen.token_ids) and gen.token_ids[-1] == chat.eos_id
        ep.extend(chat.observation(out.observation, ended_with_eos), mask=0)
    ep.turns.append(
        Turn(
            start,
            end,
            end,
            len(ep.ids),
            out.reward,
            state_key,
            adapter,
            record,
            context,
            lv.version,
        )
    )
    lv.last_observation = out.observation
    try:
        ep.episode.record_step(
            action,
            out.observation,
            out.reward,
            out.terminated,
            out.truncated,
            out.info,
            Usage(
                prompt_tokens=start,
                completion_tokens=end - start,
                token_ids=list(gen.token_ids),
                logprobs=list(gen.logprobs),
                loss_mask=[1] * (end - start),
            ),
        )
    except RewardError as e:  # a success, score or return the env got wrong: an error episode
        ep.episode.fail(str(e))


def _finish(ep: TokenEpisode) -> None:
    ep.episode.duration_s = time.time() - ep.episode.started_at
    ep.check()
