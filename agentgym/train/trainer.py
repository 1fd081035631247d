"""The training loop shared by every algorithm: data or rollouts -> credit -> update -> log.

Algorithm logic lives in its own module (sft.py, grpo.py, reinforce_pp.py, gigpo.py, ppo.py),
found by ``algo.name`` in the registry of :mod:`agentgym.train.algorithm`; this file is the
loop: model and optimizer setup, rollouts with the policy being trained (batched generation
through ``load_engine`` over the policy), error accounting, gradient accumulation and mixed precision.
What is not the loop has its own module: held-out evaluation (:mod:`~agentgym.train.heldout`),
the metrics log (:mod:`~agentgym.train.runlog`) and checkpoints (:mod:`~agentgym.train.checkpoint`).
Under torchrun the loop runs on every rank, each rolling out and training its share of a step
(:mod:`~agentgym.train.distributed`); with one process those calls do nothing.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agentgym.llm.engine.precision import warn_if_emulated_bf16
from agentgym.registry import spec as spec_of
from agentgym.task import Task, TaskSuite
from agentgym.train import checkpoint, heldout, importance, sft, staleness
from agentgym.train.advantages import advantage_collapse_rate
from agentgym.train.algorithm import Algorithm, get_algorithm
from agentgym.train.batch import Batch, build_batch
from agentgym.train.chat import ChatFormat
from agentgym.train.config import PRECISION_DTYPES, TrainConfig
from agentgym.train.credit import CreditContext, episode_arrays
from agentgym.train.distributed import DataParallel, check_policy, ranks_from_env
from agentgym.train.envpool import EnvPool, make_pool
from agentgym.train.episode import TokenEpisode
from agentgym.train.policy import (
    PlainPolicy,
    Policy,
    autocast,
    get_policy,
    load_model,
    load_tokenizer,
)
from agentgym.train.rollout import Job, RolloutStats, collect, derive_seed
from agentgym.train.runlog import RunLog
from agentgym.traits import traits


class NonFiniteLoss(RuntimeError):
    """A step's loss or gradient is NaN or infinite: the run stops before the update, so no
    weights it would have poisoned are ever saved."""


class Trainer:
    """One training run of ``cfg``; :meth:`run` trains and returns the last metrics."""

    def __init__(self, cfg: TrainConfig, console: Any = None) -> None:
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        logged = cfg.model_copy(deep=True)  # the run id hashes the config as written
        check_policy(cfg.model.policy, ranks_from_env())
        self.dp = DataParallel.from_env(cfg.model.device)
        """The ranks of a data-parallel run (:mod:`agentgym.train.distributed`); one: none."""
        cfg.model.device = self.dp.device(cfg.model.device)
        self.cfg, self.console = cfg, console
        warn_if_emulated_bf16(cfg.model.precision, cfg.model.device)
        torch.manual_seed(cfg.seed)
        self.resume_from = checkpoint.latest(cfg.out_dir) if cfg.resume else None
        factory = None if cfg.model.policy is None else get_policy(cfg.model.policy)
        self.tokenizer = load_tokenizer(self.resume_from or cfg.model.path)
        self.policy: Policy = (
            PlainPolicy(self._load_model())
            if factory is None
            else factory(  # a policy with per-turn adapters around the model
                cfg.model.path,
                cfg.model.device,
                cfg.model.policy_options,
                self.tokenizer,
                self.resume_from,
            )
        )
        self.model = self.policy.model
        self.chat = ChatFormat(self.tokenizer, cfg.env.system_prompt)
        self.spec = get_algorithm(cfg.algo.name)
        self.algo: Algorithm = self.spec.build(self.model, cfg)
        self.extra = {**self.algo.extra_modules(), **self.policy.modules()}
        params = [p for p in self.model.parameters() if p.requires_grad]
        params += [p for m in self.extra.values() for p in m.parameters()]
        self.optimizer = torch.optim.AdamW(
            params, lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay
        )
        self.step = 0
        if self.resume_from is not None:
            self.step = checkpoint.load_state(self.resume_from, self.optimizer, self.extra)
        self.dp.broadcast(params)
        self._pool: EnvPool | None = None
        self._engine: Any = None
        self._weights_changed = True
        """The policy's weights changed since the engine last took them (an engine with its own
        copy, vLLM, loaded the starting checkpoint: a resumed adapter is not in it yet)."""
        self._async: Any = None
        """The rollout worker of ``rollout.mode: async``, started by the first RL step."""
        if cfg.rollout.mode == "async" and self.dp.size > 1:
            raise ValueError(
                "rollout.mode async runs one rollout worker beside one learner: drop --nproc "
                "(data-parallel ranks roll out in step)"
            )
        self._harness: Any = None
        """The recording gateway and harness processes (``rollout.harness``), made at first use."""
        self._said_per_call = False
        if not self.dp.main:  # rank 0 alone keeps the run's record
            logged.db, console = None, None
        self.runlog = RunLog(logged, console)
        """Every step's metrics: kept, stored in the store's rows and printed."""
        self.history = self.runlog.history
        """Every logged row so far (the run log's own list)."""

    # ------------------------------------------------------------------ setup
    def _load_model(self) -> Any:
        """The policy: the latest checkpoint when resuming (a LoRA checkpoint loads its
        adapters onto their base), else ``model.path``, with new adapters if ``model.lora``."""
        cfg = self.cfg.model
        path = self.resume_from or cfg.path
        return load_model(path, cfg.device, cfg.lora, cfg.gradient_checkpointing)

    @property
    def pool(self) -> EnvPool:
        if self._pool is None:
            r = self.cfg.rollout
            self._pool = make_pool(
                self.cfg.env.id, self.cfg.env.kwargs, r.backend, r.num_workers, r.address
            )
        return self._pool

    @property
    def engine(self) -> Any:
        """The rollouts' engine (``rollout.engine``), over the policy (made on first use)."""
        if self._engine is None:
            from agentgym.llm.engine import load_engine

            r, model = self.cfg.rollout, self.cfg.model
            self._engine = load_engine(
                r.engine,
                self.model,
                r.max_batch_size,
                PRECISION_DTYPES[model.precision],
                tokenizer=self.tokenizer,
                device=model.device,
                prefix_cache_mb=0 if self.policy.per_turn_adapters else r.prefix_cache_mb,
                kv_cache_gb=r.kv_cache_gb,
                max_context_tokens=r.max_context_tokens,
                seed=self.cfg.seed,
            )
        return self._engine

    @property
    def harness(self) -> Any:
        """The gateway over the policy that ``rollout.harness`` programs call."""
        if self._harness is None:
            from agentgym.train.harness import HarnessRollouts

            r = self.cfg.rollout
            self._harness = HarnessRollouts(
                str(r.harness),
                self.engine,
                self.cfg.env.id,
                self.cfg.env.kwargs,
                Path(self.cfg.out_dir) / ("gateway" if self.dp.main else f"gateway-{self.dp.rank}"),
                lambda: f"step-{self.step}",
                r.harness_parallel,
                r.harness_timeout_s,
                r.harness_env,
            )
        return self._harness

    def train_tasks(self) -> list[Task]:
        env = self.cfg.env
        suite = _suite(env.suite, self.pool)
        return suite.filter(env.tags, env.limit).tasks

    def eval_tasks(self) -> list[Task]:
        env = self.cfg.env
        if env.eval_suite is None:
            return []
        return TaskSuite.load(env.eval_suite).filter(env.eval_tags, env.eval_limit).tasks

    # ------------------------------------------------------------------ loop
    def run(self) -> dict[str, float]:
        """Train until ``cfg.steps``; checkpoint and log as configured; return the last metrics."""
        cfg = self.cfg
        step_fn = self._rl_step() if self.spec.rollouts else self._sft_step()
        while self.step < cfg.steps:
            started = time.perf_counter()
            metrics = step_fn(self.step)
            self.step += 1
            metrics["step_s"] = time.perf_counter() - started
            metrics["steps_per_s"] = 1.0 / metrics["step_s"]
            if cfg.eval_every and self.step % cfg.eval_every == 0:
                metrics.update(self.evaluate())
            self.log(metrics)
            if cfg.save_every and self.step % cfg.save_every == 0:
                self.save(checkpoint.step_dir(cfg.out_dir, self.step))
        self.save(Path(cfg.out_dir) / "final")
        return self.history[-1] if self.history else {}

    def _sft_step(self) -> Any:
        data = sft.demonstrations(self.cfg, self.chat, self.pool.system_prompt, self.train_tasks)
        if not data:
            raise ValueError("no SFT data: no successful expert episode on the training tasks")
        size = min(self.cfg.sft.batch_size, len(data))

        def step(i: int) -> dict[str, float]:
            rng = np.random.default_rng(derive_seed(self.cfg.seed, "sft", i))
            episodes = [data[j] for j in rng.choice(len(data), size, replace=False)]
            return self.update(episodes, None, None)

        return step

    def _jobs(self, tasks: list[Task], i: int) -> list[Job]:
        """Step ``i``'s episodes: ``tasks_per_step`` tasks drawn by the step's seed, each
        ``group_size`` times."""
        r = self.cfg.rollout
        rng = np.random.default_rng(derive_seed(self.cfg.seed, "tasks", i))
        chosen = [
            tasks[j]
            for j in rng.choice(len(tasks), min(r.tasks_per_step, len(tasks)), replace=False)
        ]
        return [
            Job(t, f"{i}:{t.id}", k, derive_seed(self.cfg.seed, i, t.id, k))
            for t in chosen
            for k in range(r.group_size)
        ]

    def _rl_step(self) -> Any:
        tasks = self.train_tasks()
        r = self.cfg.rollout
        if not tasks:
            raise ValueError("no training tasks left after env.tags/env.limit")
        if r.mode == "async":
            return self._async_step(tasks)

        def step(i: int) -> dict[str, float]:
            jobs = self._jobs(tasks, i)
            mine, stats = self.rollout(
                self.dp.shard(jobs), derive_seed(self.cfg.seed, "gen", i), r.temperature
            )
            rescored = self.rescore(mine)
            episodes = self.dp.gather(mine)  # credit sees every group whole, in job order
            stats = merge_stats(self.dp.gather([stats]))
            return {**self.rl_update(episodes, stats), **merge_means(self.dp.gather([rescored]))}

        return step

    def _async_step(self, tasks: list[Task]) -> Any:
        """Steps on batches a worker process samples beside the learner: the jobs of the next
        steps are queued ahead, and the weights go to the worker after every update."""
        from agentgym.train.async_rollouts import AsyncRollouts, ahead

        r = self.cfg.rollout
        if self._async is None:
            path = self.resume_from or self.cfg.model.path
            self._async = AsyncRollouts(self.cfg, str(path), self.model, self.step)
        feeder = self._async

        def step(i: int) -> dict[str, float]:
            while feeder.submitted <= min(i + ahead(r.max_staleness), self.cfg.steps - 1):
                j = feeder.submitted
                feeder.submit(j, self._jobs(tasks, j), derive_seed(self.cfg.seed, "gen", j))
            waited = time.perf_counter()
            episodes, stats = feeder.take(i)
            waited = time.perf_counter() - waited  # the learner idle: sampling is the bottleneck
            versions = {**staleness.spread(episodes), "rollout_wait_s": waited}
            rescored = self.rescore(episodes)
            metrics = {**self.rl_update(episodes, stats), **rescored, **versions}
            feeder.push(self.model, i + 1)
            return metrics

        return step

    def rollout(
        self, jobs: list[Job], seed: int, temperature: float, explore: bool = True
    ) -> tuple[list[TokenEpisode], RolloutStats]:
        """Episodes of ``jobs`` sampled from the current weights (eval mode, no grad).

        A policy with per-turn adapters samples its picks when ``explore`` (training), else
        picks greedily.
        """
        r = self.cfg.rollout
        env = spec_of(self.cfg.env.id).load()  # the env's stops, as agentgym eval's agent's
        sampling = r.for_env(env, temperature=temperature)
        picker = self.policy.adapter_picker(self.step, explore, seed)
        engine = self.engine
        if self._weights_changed:  # the weights of the last update
            engine.sync_weights(self.model)
            self._weights_changed = False
        engine.clear_prefix_cache()  # keys and values of older weights
        self.model.eval()
        try:
            with self._autocast():
                if r.harness is not None:
                    episodes, stats = self.harness.collect(jobs, r, sampling)
                else:
                    episodes, stats = collect(
                        self.engine, self.chat, self.pool, jobs, r, sampling, seed, picker
                    )
            staleness.stamp(episodes, self.step)  # the weights of ``self.step`` updates sampled
            return episodes, stats
        finally:
            self.model.train()

    def rescore(self, episodes: list[TokenEpisode]) -> dict[str, float]:
        """Rollouts from an engine with its own weights (vLLM, an asynchronous worker), or any
        rollouts under ``rollout.importance``: the loss's sampling logprobs recomputed by the policy (the
        engine's kept for the importance weights), and the gap between the engine's and the
        policy's (``logprob_gap_mean``, ``logprob_gap_max``)."""
        r = self.cfg.rollout
        if r.mode == "sync" and self.engine.shares_weights and r.importance == "none":
            return {}
        from agentgym.train.engine_sync import recompute_logprobs

        importance.keep_sampler_logprobs(episodes)  # the engine's, for the importance weights
        return recompute_logprobs(
            self.model,
            [ep for ep in episodes if ep.ok],
            self.tokenizer.pad_token_id,
            self.cfg.optim.micro_batch_size,
            self.cfg.model.device,
            self._autocast,
        )

    def rl_update(self, episodes: list[TokenEpisode], stats: RolloutStats) -> dict[str, float]:
        """Credit, error accounting and the update for one rollout batch."""
        r = self.cfg.rollout
        episodes, stale = staleness.screen(episodes, self.step, r.max_staleness, r.stale)
        rewards, groups, valid = episode_arrays(episodes)
        ctx = CreditContext(self.cfg.algo, self.model, metrics={}, tokenizer=self.tokenizer)
        advantages, returns = self.algo.advantages(episodes, ctx)
        advantages, weighed = importance.correct(
            episodes, advantages, r.importance, r.importance_cap
        )
        kept = [i for i, ep in enumerate(episodes) if ep.ok and ep.turns]
        metrics = {
            "reward": float(rewards[valid].mean()) if valid.any() else 0.0,
            "success": float(np.mean([episodes[i].episode.success for i in kept])) if kept else 0.0,
            "acr": advantage_collapse_rate(rewards, groups, valid),
            "errors": float((~valid).sum()),
            "episodes": float(len(episodes)),
            "turns": float(np.mean([len(episodes[i].turns) for i in kept])) if kept else 0.0,
            "episodes_per_s": stats.episodes_per_s,
            "tokens_per_s": stats.tokens_per_s,
            "generate_s": stats.generate_s,
            **(ctx.metrics or {}),
            **stale,
            **weighed,
        }
        if kept:
            metrics.update(
                self.update(
                    [episodes[i] for i in kept],
                    [advantages[i] for i in kept],
                    [returns[i] for i in kept] if returns is not None else None,
                )
            )
        return metrics

    def update(
        self,
        episodes: list[TokenEpisode],
        advantages: list[np.ndarray] | None,
        returns: list[np.ndarray] | None,
    ) -> dict[str, float]:
        """``algo.epochs`` optimiser steps over one batch, accumulating over micro-batches."""
        cfg = self.cfg
        self._say_per_call(episodes)
        batch = build_batch(
            episodes,
            advantages,
            cfg.algo.layout,
            cfg.algo.loss_agg,
            self.tokenizer.pad_token_id,
            returns,
        )
        bound = self.policy.bind(episodes, advantages or [])
        loss_tokens = float(batch.loss_mask.sum())
        if not self.policy.per_turn_adapters:  # such a policy reads rows in the order bound
            batch = self._rows_to_train(batch)
        trained_rows = float(batch.rows)
        if self.dp.size > 1:  # this rank's rows; the weights stay those of the whole batch
            batch = batch.select(self.dp.rows(batch.rows))
        totals: dict[str, float] = {}
        for _ in range(cfg.algo.epochs):
            totals = self._epoch(batch)
        self._weights_changed = True
        totals["loss_tokens"] = loss_tokens
        totals["trained_rows"] = trained_rows
        return {**bound, **totals}

    def _say_per_call(self, episodes: list[TokenEpisode]) -> None:
        """Once per run: why some episodes train one row per call instead of one sequence."""
        rewritten = sum(ep.per_call for ep in episodes)
        if self._said_per_call or not rewritten or self.cfg.algo.layout == "step":
            return
        self._said_per_call = True
        why = (
            "the chat template rewrites earlier turns"
            if self.chat.rewrites_history
            else "the agent edited or cut its history, or the template re-rendered a turn"
        )
        warnings.warn(
            f"{why}: {rewritten} of {len(episodes)} episodes train one row per model call, each "
            "with its own prompt, instead of one sequence per episode",
            RuntimeWarning,
            stacklevel=3,
        )

    def _rows_to_train(self, batch: Batch) -> Batch:
        """The rows that can change the weights, longest first (``optim.sort_by_length``).

        With ``algo.skip_zero_advantage``, an algorithm whose zero-advantage rows are inert (a
        policy-gradient loss without KL or entropy terms gives a row whose loss tokens all have
        advantage 0 exactly zero gradient) trains without them (one row stays, so the optimiser
        steps on the same, zero, gradients as without).
        """
        rows = torch.arange(batch.rows)
        if self.cfg.algo.skip_zero_advantage and self.algo.zero_advantage_inert:
            moves = ((batch.advantages != 0) & (batch.loss_mask > 0)).any(1)
            rows = rows[moves] if moves.any() else rows[:1]
        if self.cfg.optim.sort_by_length:
            lengths = batch.attention_mask[rows].sum(1)
            rows = rows[torch.argsort(lengths, descending=True, stable=True)]
        return batch if rows.tolist() == list(range(batch.rows)) else batch.select(rows)

    def _epoch(self, batch: Batch) -> dict[str, float]:
        self.optimizer.zero_grad(set_to_none=True)
        totals: dict[str, float] = {}
        for mb in batch.micro_batches(self.cfg.optim.micro_batch_size):
            mb = _to(mb, self.cfg.model.device)
            with self._autocast():
                loss, parts = self.algo.loss(mb)
            self._check_finite("loss", loss)
            loss.backward()
            for k, v in parts.items():
                totals[k] = totals.get(k, 0.0) + v
        totals = self.dp.sum_metrics(totals)
        extra, parts = self.policy.loss()  # the policy's own (none for a plain model)
        if extra is not None and extra.requires_grad and self.dp.main:  # counted once
            extra.backward()
        totals.update(parts)
        params = [p for g in self.optimizer.param_groups for p in g["params"]]
        self.dp.sum_grads(params)
        clip = self.cfg.optim.grad_clip
        norm = torch.nn.utils.clip_grad_norm_(params, clip if clip > 0 else float("inf"))
        self._check_finite("gradient norm", norm)  # clipping an infinite norm gives NaN
        self.optimizer.step()
        totals["grad_norm"] = float(norm)
        return totals

    def _check_finite(self, what: str, value: torch.Tensor) -> None:
        """Stop the run (:class:`NonFiniteLoss`) on a NaN or infinite loss or gradient norm."""
        if not bool(torch.isfinite(value.detach()).all()):
            raise NonFiniteLoss(
                f"training stopped at step {self.step + 1}: the {what} is "
                f"{float(value.detach().float().sum())}; the weights were not updated and "
                "nothing of this run was saved since its last checkpoint"
            )

    def _autocast(self) -> contextlib.AbstractContextManager[Any]:
        return autocast(self.cfg.model.precision, self.cfg.model.device)

    # ------------------------------------------------------------------ eval, saving, logging
    def evaluate(self, tasks: list[Task] | None = None) -> dict[str, float]:
        """Success on held-out tasks (``eval_samples`` each) with a 95% Wilson interval; the
        episodes are stored as a run of their own (:mod:`agentgym.train.heldout`)."""
        tasks = self.eval_tasks() if tasks is None else tasks
        if not tasks:
            return {}
        episodes = self.eval_episodes(tasks)
        log = self.runlog
        heldout.store_eval(log.store, log.run_id, self.cfg, self.step, tasks, episodes)
        return heldout.success(episodes)

    def eval_episodes(self, tasks: list[Task] | None = None) -> list[Any]:
        """The held-out rollouts :meth:`evaluate` scores (``eval_samples`` per task, greedy adapter
        picks), for callers that read more than success. Env and sampling seeds are those of
        ``agentgym eval --seed SEED`` (``episode_seed``, then ``turn_seed`` per turn), and actions
        are sampled with the env's spec as its agent samples them, so greedy episodes here and
        there agree."""
        tasks = self.eval_tasks() if tasks is None else tasks
        jobs = heldout.eval_jobs(tasks, self.cfg.seed, self.cfg.eval_samples)
        with torch.no_grad():
            episodes, _ = self.rollout(
                self.dp.shard(jobs),
                derive_seed(self.cfg.seed, "eval"),
                self.cfg.eval_temperature,
                explore=False,
            )
        return self.dp.gather(episodes)

    def save(self, directory: Path) -> Path:
        """A resumable checkpoint, written by rank 0 alone (the ranks hold the same state)."""
        if self.dp.main:
            checkpoint.save(
                directory,
                self.model,
                self.tokenizer,
                self.optimizer,
                self.extra,
                self.step,
                self.cfg.model_dump(mode="json"),
            )
            self.policy.save(directory)
        self.dp.barrier()
        return directory

    def merged(self, directory: Path) -> Path:
        """A plain checkpoint (LoRA merged) that loads as ``--agent hf:DIRECTORY``."""
        if self.policy.per_turn_adapters:
            raise ValueError(
                "a policy with per-turn adapters does not merge into one model: evaluate "
                f"its checkpoint with its agent spec ({self.cfg.model.policy}:PATH)"
            )
        return checkpoint.save_merged(directory, self.model, self.tokenizer)

    def log(self, metrics: dict[str, float]) -> None:
        """Keep, store and print this step's metrics (:class:`~agentgym.train.runlog.RunLog`)."""
        self.runlog.write(self.step, metrics)

    def close(self) -> None:
        if self._async is not None:
            self._async.close()
            self._async = None
        if self._engine is not None:
            self._engine.close()
            self._engine = None
        if self._harness is not None:
            self._harness.close()
            self._harness = None
        if self._pool is not None:
            self._pool.close()
        self.runlog.close()
        self.dp.close()


def merge_stats(parts: list[RolloutStats]) -> RolloutStats:
    """The ranks' rollout stats as one batch's: counts add up, times are the slowest rank's."""
    return RolloutStats(
        episodes=sum(s.episodes for s in parts),
        generated_tokens=sum(s.generated_tokens for s in parts),
        prompt_tokens=sum(s.prompt_tokens for s in parts),
        generate_s=max(s.generate_s for s in parts),
        env_s=max(s.env_s for s in parts),
        wall_s=max(s.wall_s for s in parts),
    )


def merge_means(parts: list[dict[str, float]]) -> dict[str, float]:
    """The ranks' metrics of their shares: a ``*_max`` the largest, any other the mean."""
    values: dict[str, list[float]] = {}
    for part in parts:
        for key, value in part.items():
            values.setdefault(key, []).append(value)
    return {k: max(v) if k.endswith("_max") else float(np.mean(v)) for k, v in values.items()}


def _suite(name: str | None, pool: EnvPool) -> TaskSuite:
    if name is not None:
        return TaskSuite.load(name)
    from agentgym.registry import spec

    default = traits(spec(pool.env_id).load()).default_suite
    if default is None:
        raise ValueError(f"{pool.env_id} has no default suite: set env.suite")
    return TaskSuite.load(default)


def _to(mb: Batch, device: str) -> Batch:
    if device == "cpu":
        return mb
    from dataclasses import fields, replace

    return replace(mb, **{f.name: getattr(mb, f.name).to(device) for f in fields(mb)})
