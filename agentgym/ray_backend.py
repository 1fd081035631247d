"""Ray for evaluation and training, all of it: one way to join or start Ray, eval episodes in Ray
actors, and the trainer's env workers as Ray actors.

``evaluate(..., backend="ray")`` sends each actor (task, sample, seed) and gets the finished
:class:`~agentgym.episode.Episode` back; the store, resume, seeds and callbacks stay in the runner,
so a run gives the same rows on either backend (and can be resumed on the other). Agents and envs
may not pickle, so every actor builds its own: envs from the task's env id (one per id, reused,
sandboxed when ``isolate`` is set), the agent from its spec string, or from a factory that
cloudpickle can send. Each actor runs its own agent: an ``hf:`` spec loads one model per actor, so
for local models serve one (``agentgym serve``) and evaluate ``openai:`` against it.

The trainer's ``rollout.backend: ray`` steps its envs in :class:`RayEnvPool`, the same pool
interface as :class:`~agentgym.train.local_pool.LocalEnvPool`: each actor holds a local pool, and
slot ``i`` lives on actor ``i % num_workers``. One ``step`` call sends every actor its share of the
actions and waits for all of them, so envs with slow steps (sandboxes, simulators) step in
parallel while the trainer process keeps the model and does the batched generation.
``address=None`` starts (or joins) a local Ray instance; ``address="ray://host:10001"`` or
``"auto"`` joins a cluster.

Ray is the optional ``ray`` extra and is imported only here, only when asked for. This module
builds on the runner's and the trainer's in-process machinery, which import it only when Ray is
asked for.
"""

from __future__ import annotations

import socket
from typing import Any

from agentgym.agent import AgentFactory, agent_factory
from agentgym.episode import Episode
from agentgym.extras import refusal
from agentgym.rollout import EpisodeSettings, failed_episode, run_episode
from agentgym.task import Task
from agentgym.train.local_pool import LocalEnvPool, Outcome


def init_ray(address: str | None = None, num_cpus: int | None = None) -> Any:
    """Import Ray and connect once: join ``address`` (``auto``, ``ray://host:10001``), else start a
    local instance (``num_cpus`` of this machine's CPUs; all by default). Returns the module."""
    try:
        import ray
    except ImportError as e:
        raise refusal("--backend ray", ["ray"]) from e  # pip install ".[ray]", as every extra
    if not ray.is_initialized():
        _check_reachable(address)
        local: dict[str, Any] = {"num_cpus": num_cpus} if address is None else {}
        ray.init(address=address, include_dashboard=False, log_to_driver=False, **local)
    return ray


def _check_reachable(address: str | None, timeout_s: float = 5.0) -> None:
    """Fail fast on a ``HOST:PORT`` nobody answers at: Ray itself waits minutes, silently."""
    host, sep, port = (address or "").removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():  # None, "auto", "local": Ray resolves those itself
        return
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise ConnectionError(
            f"no Ray cluster answers at {address!r} ({e}); start one there with "
            "`ray start --head`, or leave the address out for a local Ray instance"
        ) from e


# ============================================================================ evaluation
class EpisodeWorker:
    """The actor body: an env per env id and the agent, built here, never sent."""

    def __init__(self, agent: str | AgentFactory, settings: EpisodeSettings) -> None:
        self.agent, self.settings = agent, settings
        self.factory: AgentFactory | None = None
        self.envs: dict[str, Any] = {}

    def _make_agent(self, env: Any) -> Any:
        if self.factory is None:  # resolved here, inside the episode: a failure is its error
            self.factory = agent_factory(self.agent) if isinstance(self.agent, str) else self.agent
        return self.factory(env)

    def run(self, task: Task, sample: int, seed: int) -> Episode:
        return run_episode(self.envs, self._make_agent, task, sample, seed, self.settings)

    def close(self) -> None:
        for env in self.envs.values():
            env.close()
        self.envs.clear()


class RayBackend:
    """:class:`~agentgym.runner.EpisodeBackend` over ``workers`` Ray actors, one per asyncio worker.

    Actors take no CPU reservation (episodes mostly wait on envs and model APIs; ``concurrency``
    bounds them) and spread over the cluster's nodes. An actor that dies (crash, lost node) turns its
    episode into an error and is replaced.
    """

    def __init__(
        self,
        agent: str | AgentFactory,
        settings: EpisodeSettings,
        workers: int,
        address: str | None = None,
    ) -> None:
        ray = init_ray(address)
        if not isinstance(agent, str):
            try:
                ray.cloudpickle.dumps(agent)
            except Exception as e:
                raise ValueError(
                    f"the agent factory {agent!r} cannot be sent to Ray workers ({e}); "
                    "pass an agent spec such as 'openai:MODEL', or a factory that pickles"
                ) from e
        self._ray = ray
        self._actor: Any = ray.remote(num_cpus=0, scheduling_strategy="SPREAD")(EpisodeWorker)
        self._args = (agent, settings)
        self.actors: list[Any] = [self._start() for _ in range(workers)]

    def _start(self) -> Any:
        return self._actor.remote(*self._args)

    async def run(self, worker: int, task: Task, sample: int, seed: int) -> Episode:
        try:
            episode: Episode = await self.actors[worker].run.remote(task, sample, seed)
        except self._ray.exceptions.RayActorError as e:  # the worker process is gone
            self.actors[worker] = self._start()
            return failed_episode(task, sample, e)
        except Exception as e:  # e.g. the task or episode failed to (un)pickle
            return failed_episode(task, sample, e)
        return episode

    def close(self, clean: bool) -> None:
        try:
            if clean:  # like threads: an interrupted run's envs die with their workers
                self._ray.get([a.close.remote() for a in self.actors])
        finally:
            for actor in self.actors:
                self._ray.kill(actor)
            self.actors = []


# ============================================================================ training
class EnvWorker:
    """The actor body: a local pool for the slots this worker owns. The worker process imports
    this module to build it, and with it the ``agentgym`` package, which registers the envs."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any]) -> None:
        self.pool = LocalEnvPool(env_id, env_kwargs)

    def reset(self, jobs: list[tuple[int, Task, int]]) -> list[tuple[int, Outcome]]:
        return [(slot, self.pool.reset_slot(slot, task, seed)) for slot, task, seed in jobs]

    def step(self, actions: dict[int, str]) -> dict[int, Outcome]:
        return self.pool.step(actions)

    def close(self) -> None:
        self.pool.close()


class RayEnvPool:
    """:class:`~agentgym.train.envpool.EnvPool` over ``num_workers`` Ray actors."""

    def __init__(
        self,
        env_id: str,
        env_kwargs: dict[str, Any] | None = None,
        num_workers: int = 2,
        address: str | None = None,
    ) -> None:
        if num_workers < 1:
            raise ValueError(f"num_workers must be at least 1, got {num_workers}")
        ray = init_ray(address)
        local = LocalEnvPool(env_id, env_kwargs)  # validates the id; gives prompt and flags
        self.env_id = env_id
        self.system_prompt, self.free_text_actions = local.system_prompt, local.free_text_actions
        actor: Any = ray.remote(num_cpus=0)(EnvWorker)
        self._ray = ray
        self.workers: list[Any] = [
            actor.remote(env_id, dict(env_kwargs or {})) for _ in range(num_workers)
        ]

    def reset(self, jobs: list[tuple[Task, int]]) -> list[Outcome]:
        n = len(self.workers)
        shares = [[(i, t, s) for i, (t, s) in enumerate(jobs) if i % n == k] for k in range(n)]
        parts = self._ray.get(
            [w.reset.remote(sh) for w, sh in zip(self.workers, shares, strict=True)]
        )
        found = dict(pair for part in parts for pair in part)
        return [found[i] for i in range(len(jobs))]

    def step(self, actions: dict[int, str]) -> dict[int, Outcome]:
        n = len(self.workers)
        shares = [{i: a for i, a in actions.items() if i % n == k} for k in range(n)]
        calls = [w.step.remote(sh) for w, sh in zip(self.workers, shares, strict=True) if sh]
        return {slot: out for part in self._ray.get(calls) for slot, out in part.items()}

    def close(self) -> None:
        self._ray.get([w.close.remote() for w in self.workers])
        for w in self.workers:
            self._ray.kill(w)
        self.workers = []
