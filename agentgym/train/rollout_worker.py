"""The process that samples rollouts beside the learner (``rollout.mode: async``).

It owns a copy of the policy (loaded from the learner's starting checkpoint, with the same LoRA
adapters), a local engine over that copy and its own env pool, and plays the batches of jobs the
learner sends. Before every turn it swaps in the newest weights the learner has pushed (the
trainable tensors: a LoRA adapter, else every weight) and forgets the prefixes computed with the
old ones, so each turn is sampled, and stamped, by one version, and an episode may span several.

Everything it receives and sends is plain data: the config as JSON-mode values, jobs and
episodes as dicts (:mod:`agentgym.train.episode_wire`), weights as numpy arrays by name.
"""

from __future__ import annotations

import os
import queue
import traceback
from typing import Any

import numpy as np
import torch

from agentgym.registry import register
from agentgym.registry import spec as spec_of
from agentgym.train.chat import ChatFormat
from agentgym.train.config import PRECISION_DTYPES, TrainConfig
from agentgym.train.envpool import make_pool
from agentgym.train.episode_wire import episode_to_plain, job_from_plain, stats_to_plain
from agentgym.train.policy import autocast, load_model, load_tokenizer
from agentgym.train.rollout import collect

POLL_S = 0.2
"""How often a waiting worker looks at its stop flag and its parent."""


class Stopped(Exception):
    """The learner asked the worker to stop, or went away, in the middle of a batch."""


class RolloutWorker:
    """The sampler's side of asynchronous rollouts; :meth:`run` serves until told to stop."""

    def __init__(
        self,
        config: dict[str, Any],
        path: str,
        inbox: Any,
        weights: Any,
        outbox: Any,
        stop: Any,
        parent: int,
        env: dict[str, Any] | None = None,
    ) -> None:
        if env is not None:
            register_env(env)
        self.cfg = TrainConfig.model_validate(config)
        self.inbox, self.weights, self.outbox, self.stop = inbox, weights, outbox, stop
        self.parent = parent
        torch.set_num_threads(self.cfg.threads or 1)
        torch.manual_seed(self.cfg.seed)
        m, r = self.cfg.model, self.cfg.rollout
        self.model = load_model(path, m.device, m.lora)
        self.model.eval()
        self.model.requires_grad_(False)
        self.params = dict(self.model.named_parameters())
        self.tokenizer = load_tokenizer(path)
        self.chat = ChatFormat(self.tokenizer, self.cfg.env.system_prompt)
        self.pool = make_pool(
            self.cfg.env.id, self.cfg.env.kwargs, r.backend, r.num_workers, r.address
        )
        self.sampling = r.for_env(spec_of(self.cfg.env.id).load(), temperature=r.temperature)
        from agentgym.llm.engine import load_engine

        self.engine = load_engine(
            "local",
            self.model,
            r.max_batch_size,
            PRECISION_DTYPES[m.precision],
            tokenizer=self.tokenizer,
            device=m.device,
            prefix_cache_mb=r.prefix_cache_mb,
            kv_cache_gb=r.kv_cache_gb,
            max_context_tokens=r.max_context_tokens,
            seed=self.cfg.seed,
        )
        self.version: int | None = None
        """The policy version of the weights in the copy (None until the first push)."""

    def run(self) -> None:
        """Play each batch of jobs the learner sends and send its episodes back, until stopped."""
        while True:
            message = self._next(self.inbox)
            if message is None or message[0] == "stop":
                return
            _, step, jobs, seed = message
            self.refresh(wait=self.version is None)
            with torch.no_grad(), autocast(self.cfg.model.precision, self.cfg.model.device):
                episodes, stats = collect(
                    self.engine,
                    self.chat,
                    self.pool,
                    [job_from_plain(j) for j in jobs],
                    self.cfg.rollout,
                    self.sampling,
                    int(seed),
                    between_turns=self.between_turns,
                )
            plain = [episode_to_plain(ep) for ep in episodes]
            self.outbox.put(("batch", int(step), plain, stats_to_plain(stats)))

    def between_turns(self) -> int:
        """Stop if asked; else take the newest weights and return their version."""
        if self._should_stop():
            raise Stopped
        self.refresh(wait=False)
        assert self.version is not None
        return self.version

    def refresh(self, wait: bool) -> None:
        """Swap in the newest pushed weights (``wait``: block until some arrive)."""
        latest = None
        while True:
            try:
                latest = self.weights.get_nowait()
            except queue.Empty:
                if latest is not None or not wait:
                    break
                latest = self._next(self.weights)
                if latest is None:
                    raise Stopped from None
        if latest is None:
            return
        version, state = latest
        unknown = sorted(set(state) - set(self.params))
        if unknown:
            raise KeyError(f"pushed weights the worker's model lacks: {unknown[:3]}")
        with torch.no_grad():
            for name, array in state.items():
                self.params[name].copy_(torch.from_numpy(np.asarray(array)))
        self.engine.clear_prefix_cache()  # keys and values of the older weights
        self.version = int(version)

    def _next(self, source: Any) -> Any:
        """The next message of ``source``; None once stopped or orphaned."""
        while not self._should_stop():
            try:
                return source.get(timeout=POLL_S)
            except queue.Empty:
                continue
        return None

    def _should_stop(self) -> bool:
        return self.stop.is_set() or os.getppid() != self.parent

    def close(self) -> None:
        self.engine.close()
        self.pool.close()


def env_entry(env_id: str) -> dict[str, Any] | None:
    """The registration of ``env_id`` as plain data, for a worker whose interpreter has not
    registered it (an env registered at run time, not by a plug-in); None for an id that
    resolves anywhere by itself (a scheme such as ``openenv:URL``)."""
    found = spec_of(env_id)
    if found.target is not None:
        return None
    return {
        "id": found.id,
        "entry_point": found.entry_point,
        "kwargs": found.kwargs,
        "description": found.description,
    }


def register_env(entry: dict[str, Any]) -> None:
    """Register the env :func:`env_entry` described, unless this interpreter knows it."""
    try:
        spec_of(entry["id"])
    except KeyError:
        register(entry["id"], entry["entry_point"], entry["kwargs"], entry["description"])


def serve(
    config: dict[str, Any],
    path: str,
    inbox: Any,
    weights: Any,
    outbox: Any,
    stop: Any,
    parent: int,
    env: dict[str, Any] | None = None,
) -> None:
    """The worker process's entry point: serve until stopped; a failure goes back as text."""
    worker = None
    try:
        worker = RolloutWorker(config, path, inbox, weights, outbox, stop, parent, env)
        worker.run()
    except Stopped:
        pass
    except BaseException:  # the learner raises it as the run's error
        outbox.put(("error", traceback.format_exc()))
    finally:
        if worker is not None:
            worker.close()
