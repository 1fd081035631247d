"""Harness rollouts (``rollout.harness``): train an agent program the trainer does not own.

A recording gateway (:mod:`agentgym.llm.recording`) serves the policy being trained over the
OpenAI API from this process, and the envs of the episodes
(:mod:`agentgym.train.harness_env`). For every episode the trainer makes and resets the env,
opens a gateway session under a fresh unguessable id and key, writes an episode file (gateway
URL, session id and key, sampling, the env's first observation: see :mod:`agentgym.harness`)
in a private folder (mode 0700) and runs the harness command there with ``AGENTGYM_EPISODE``
naming it, in a reduced environment (``rollout.harness_env``). The program plays with its own
prompts and parsing and sends each action to the gateway, where the trainer steps the env and
records its answer. The training episode is the trainer's record (the env's reward, never the
program's claim) with the calls the gateway recorded for the session
(:func:`~agentgym.train.recorded.episode_from_calls`): the ids the model read and sampled.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentgym.episode import Episode
from agentgym.harness import ENV_VAR
from agentgym.llm.recording import Recorder, key_hash
from agentgym.llm.sampling import SamplingSpec
from agentgym.train.config import HARNESS_ENV
from agentgym.train.episode import TokenEpisode
from agentgym.train.harness_env import HostedEpisode, add_episode_routes
from agentgym.train.harness_proc import AgentProcess
from agentgym.train.recorded import episode_from_calls
from agentgym.train.rollout import Job, RolloutStats

if TYPE_CHECKING:
    from agentgym.train.config import RolloutConfig

STDERR_TAIL = 2000
"""Characters of a failed harness's stderr kept in its episode's error."""


@dataclass
class _Running:
    index: int
    job: Job
    session: str
    episode: HostedEpisode
    workdir: Path
    proc: AgentProcess | None
    started: float
    thread: threading.Thread | None = None
    error: str | None = None


Harness = str | Callable[[dict[str, Any]], None]
"""A command run once per episode, or a function called with the episode spec in a thread
(an agent in this process: :class:`agentgym.harness.HarnessEpisode` takes the spec too)."""


class HarnessRollouts:
    """The gateway over ``engine`` and the episodes' envs, and the harness processes run
    through it (each with the trainer's variables named in ``passed_env`` only)."""

    def __init__(
        self,
        command: Harness,
        engine: Any,
        env_id: str,
        env_kwargs: dict[str, Any] | None,
        directory: str | Path,
        policy_version: Callable[[], str],
        parallel: int = 4,
        timeout_s: float = 600.0,
        passed_env: Sequence[str] = HARNESS_ENV,
    ) -> None:
        from agentgym.llm.server import ServerThread, create_app

        self.function = command if callable(command) else None
        self.argv = [] if callable(command) else shlex.split(command)
        if not callable(command) and not self.argv:
            raise ValueError("rollout.harness is empty: give the command that runs the agent")
        self.env_id, self.env_kwargs = env_id, dict(env_kwargs or {})
        self.parallel, self.timeout_s, self.passed_env = parallel, timeout_s, tuple(passed_env)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.recorder = Recorder(
            self.directory / "gateway.db", open_sessions=False, policy_version=policy_version
        )
        self.episodes: dict[str, HostedEpisode] = {}
        """The episodes being played, by session id (the gateway steps their envs)."""
        app = create_app(engine, "policy", request_timeout_s=timeout_s, recorder=self.recorder)
        add_episode_routes(app, self.episodes)
        self.server = ServerThread(app)
        self.url = self.server.url
        self._running: list[_Running] = []

    def collect(
        self, jobs: list[Job], rollout: RolloutConfig, sampling: SamplingSpec
    ) -> tuple[list[TokenEpisode], RolloutStats]:
        """Run the harness once per job (``parallel`` at a time); episodes in job order, each
        at most ``rollout.max_turns`` turns, its actions asked for as ``sampling`` says."""
        stats, started = RolloutStats(episodes=len(jobs)), time.perf_counter()
        out: list[TokenEpisode | None] = [None] * len(jobs)
        pending = list(enumerate(jobs))
        with tempfile.TemporaryDirectory(prefix="harness-", dir=self.directory) as tmp:
            try:
                while pending or self._running:
                    while pending and len(self._running) < self.parallel:
                        i, job = pending.pop(0)
                        try:
                            run = self._start(i, job, rollout.max_turns, sampling, Path(tmp))
                        except Exception:  # the env could not be made or reset
                            out[i] = _failed(job, self.env_id, traceback.format_exc())
                            continue
                        self._running.append(run)
                    time.sleep(0.02)
                    for r in [r for r in self._running if self._over(r)]:
                        self._running.remove(r)
                        out[r.index] = self._finish(r)
            finally:  # interrupted: no program outlives the trainer
                self._stop_all()
        episodes = [ep for ep in out if ep is not None]
        for ep in episodes:
            stats.generated_tokens += sum(ep.mask)
            stats.prompt_tokens += len(ep.ids) - sum(ep.mask)
        stats.wall_s = time.perf_counter() - started
        stats.generate_s = stats.wall_s
        return episodes, stats

    def _start(
        self, index: int, job: Job, max_turns: int, sampling: SamplingSpec, tmp: Path
    ) -> _Running:
        session, key = secrets.token_urlsafe(16), secrets.token_urlsafe(32)
        episode = HostedEpisode(
            self.env_id, self.env_kwargs, job.task, job.seed, max_turns, key_hash(key)
        )
        self.episodes[session] = episode
        self.recorder.open(session, key, max_calls=4 * max_turns + 8)
        workdir = Path(tempfile.mkdtemp(prefix="episode-", dir=tmp))  # mode 0700
        spec = {
            "base_url": self.url,
            "session": session,
            "key": key,
            "model": "policy",
            "sampling": _sampling(sampling),
            "max_turns": max_turns,
            "seed": job.seed,
            "workdir": str(workdir),
            **episode.opening,
            **episode.traits(),
        }
        if self.function is not None:
            r = _Running(index, job, session, episode, workdir, None, time.time())
            r.thread = threading.Thread(target=self._call, args=(r, spec), daemon=True)
            r.thread.start()
            return r
        spec_path = workdir / "episode.json"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        env = self._program_env(spec_path, workdir)
        argv = [sys.executable if a == "python" else a for a in self.argv]
        proc = AgentProcess(argv, env)
        return _Running(index, job, session, episode, workdir, proc, time.time())

    def _program_env(self, spec_path: Path, workdir: Path) -> dict[str, str]:
        """The named variables of the trainer's, and what the program needs to play."""
        env = {k: os.environ[k] for k in self.passed_env if k in os.environ}
        env["PYTHONPATH"] = _with_source_tree(env.get("PYTHONPATH"))
        return env | {
            ENV_VAR: str(spec_path),
            "OPENAI_BASE_URL": self.url,
            "TMPDIR": str(workdir),
            "OMP_NUM_THREADS": "1",
        }

    def _call(self, r: _Running, spec: dict[str, Any]) -> None:
        try:
            assert self.function is not None
            self.function(spec)
        except Exception:
            r.error = traceback.format_exc()[-STDERR_TAIL:]

    def _over(self, r: _Running) -> bool:
        if r.thread is not None:
            return not r.thread.is_alive()  # a function cannot be killed: it gets no deadline
        assert r.proc is not None
        if r.proc.poll() is not None:
            return True
        if time.time() - r.started > self.timeout_s:
            r.proc.kill()
            return True
        return False

    def _finish(self, r: _Running) -> TokenEpisode:
        why = r.error
        if r.proc is not None:
            code = r.proc.kill()  # the program's group, whatever it left running
            if r.proc.killed or code != 0:
                why = f"timed out after {self.timeout_s:g} s" if r.proc.killed else f"exited {code}"
                why += f": {r.proc.stderr_tail(STDERR_TAIL)}"
        shutil.rmtree(r.workdir, ignore_errors=True)
        self.episodes.pop(r.session, None)
        record = r.episode.finish().model_copy(update={"sample": r.job.sample})
        calls = self.recorder.calls(r.session)
        self.recorder.forget(r.session)
        if why is not None:
            record.fail(f"harness failed: {why}")
            return TokenEpisode(episode=record, group=r.job.group)
        if not record.steps:
            record.fail("the harness played no step (HarnessEpisode.step sends the actions)")
        elif not calls:
            record.fail("the harness made no call to the gateway")
        return episode_from_calls(calls, record, r.job.group)

    def _stop_all(self) -> None:
        for r in self._running:
            if r.proc is not None:
                r.proc.kill()
            r.episode.finish()
            self.episodes.pop(r.session, None)
        self._running.clear()

    def close(self) -> None:
        self._stop_all()
        self.server.stop()
        self.recorder.close()


def _failed(job: Job, env_id: str, why: str) -> TokenEpisode:
    """An episode whose env failed before its program ran."""
    record = Episode(task_id=job.task.id, env_id=env_id, sample=job.sample, seed=job.seed)
    record.fail(f"the env failed to start: {why[-STDERR_TAIL:]}")
    return TokenEpisode(episode=record, group=job.group)


def _sampling(sampling: SamplingSpec) -> dict[str, Any]:
    """``chat.completions.create`` keyword arguments of the rollout's sampling."""
    out: dict[str, Any] = {
        "max_tokens": sampling.max_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
    }
    if sampling.stop:
        out["stop"] = list(sampling.stop)
    return out


def _with_source_tree(pythonpath: str | None) -> str:
    """``PYTHONPATH`` with the source tree this agentgym runs from first, if it runs from one:
    the program's ``agentgym.harness`` must speak the trainer's protocol."""
    import agentgym
    from agentgym.source_tree import source_root

    root = source_root(Path(agentgym.__file__).parent)
    parts = [str(root)] if root is not None else []
    return os.pathsep.join(parts + ([pythonpath] if pythonpath else []))
