"""The learner's side of asynchronous rollouts (``rollout.mode: async``).

A worker process (:mod:`agentgym.train.rollout_worker`) samples batches of jobs while the
learner trains on earlier ones. The learner sends each step's jobs ahead of time
(:meth:`AsyncRollouts.submit`), takes the batch of the step it trains (:meth:`take`), and
pushes its weights after every update (:meth:`push`); the worker swaps them in between turns.
A batch is sampled by the weights of up to ``ahead`` updates before the learner's, so
``rollout.max_staleness`` and ``rollout.stale`` decide what becomes of its older episodes.

The worker is started with ``spawn`` (a fresh interpreter: no copied threads or locks), runs as
a daemon (it dies with the learner's interpreter) and watches its parent, so it never outlives
the run; :meth:`close` stops it and reaps it.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import time
from typing import Any

from agentgym.train.config import TrainConfig
from agentgym.train.episode import TokenEpisode
from agentgym.train.episode_wire import episode_from_plain, job_to_plain, stats_from_plain
from agentgym.train.rollout import Job, RolloutStats
from agentgym.train.rollout_worker import env_entry, serve


class WorkerFailed(RuntimeError):
    """The rollout worker raised, or exited without a word."""


def trainable_state(model: Any) -> dict[str, Any]:
    """The tensors an update changes, by name, as numpy arrays: a LoRA adapter's, else all."""
    return {
        name: p.detach().to("cpu", copy=True).numpy()
        for name, p in model.named_parameters()
        if p.requires_grad
    }


def ahead(max_staleness: int | None) -> int:
    """Batches the worker may sample ahead of the step the learner trains: the staleness bound
    (at least 1: otherwise nothing overlaps), or 1 without a bound."""
    return max(1, max_staleness or 1)


class AsyncRollouts:
    """A rollout worker over a copy of the policy at ``path``, fed jobs and weights."""

    def __init__(self, cfg: TrainConfig, path: str, model: Any, version: int) -> None:
        context = mp.get_context("spawn")
        self.inbox: Any = context.Queue()
        self.weights: Any = context.Queue()
        self.outbox: Any = context.Queue()
        self.stop = context.Event()
        self.process = context.Process(
            target=serve,
            args=(
                cfg.model_dump(mode="json"),
                str(path),
                self.inbox,
                self.weights,
                self.outbox,
                self.stop,
                os.getpid(),
                env_entry(cfg.env.id),
            ),
            name="agentgym-rollouts",
            daemon=True,
        )
        self.process.start()
        self.submitted = version
        """The step whose jobs go next to the worker."""
        self.pushed = -1
        self.push(model, version)

    def push(self, model: Any, version: int) -> None:
        """Hand the worker ``model``'s weights, the policy version ``version``."""
        self.weights.put((int(version), trainable_state(model)))
        self.pushed = version

    def submit(self, step: int, jobs: list[Job], seed: int) -> None:
        """Queue the jobs of ``step`` (steps go in order, each once)."""
        if step != self.submitted:
            raise ValueError(f"jobs of step {step} submitted when step {self.submitted} is next")
        self.inbox.put(("jobs", step, [job_to_plain(j) for j in jobs], int(seed)))
        self.submitted += 1

    def take(self, step: int) -> tuple[list[TokenEpisode], RolloutStats]:
        """The episodes of ``step``'s jobs, waiting for the worker to finish them (for as long
        as it lives: a batch of a large model may take many minutes)."""
        while True:
            try:
                message = self.outbox.get(timeout=1.0)
                break
            except queue.Empty:
                if not self.process.is_alive():
                    raise WorkerFailed(
                        f"the rollout worker exited (code {self.process.exitcode}) without "
                        f"the episodes of step {step}"
                    ) from None
        if message[0] == "error":
            raise WorkerFailed(f"the rollout worker failed:\n{message[1]}")
        _, got, episodes, stats = message
        if got != step:
            raise WorkerFailed(f"the rollout worker sent step {got} when step {step} was due")
        return [episode_from_plain(ep) for ep in episodes], stats_from_plain(stats)

    def close(self, timeout_s: float = 30.0) -> None:
        """Stop the worker (at its next turn), reap it, and release the queues."""
        self.stop.set()
        self.inbox.put(("stop",))
        deadline = time.monotonic() + timeout_s
        while self.process.is_alive() and time.monotonic() < deadline:
            _drain(self.outbox)  # a worker blocked on a full pipe exits once it is read
            self.process.join(0.2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5.0)
        for q in (self.inbox, self.weights, self.outbox):
            q.cancel_join_thread()
            q.close()


def _drain(source: Any) -> None:
    while True:
        try:
            source.get_nowait()
        except (queue.Empty, OSError, ValueError):
            return
