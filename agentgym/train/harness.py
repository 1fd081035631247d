"""Harness rollouts (``rollout.harness``): train an agent program the trainer does not own.

A recording gateway (:mod:`agentgym.llm.recording`) serves the policy being trained over the
OpenAI API from this process. For every episode the trainer opens a gateway session, writes an
episode file (gateway URL, session id, sampling, the env's id, options, task and seed: see
:mod:`agentgym.harness`) and runs the harness command with ``AGENTGYM_EPISODE`` naming it. The
program plays the episode in its own process with its own prompts and parsing, stepping the env
there; the env's rewards come back in the result file. The training episode is then built from
the calls the gateway recorded for the session (:func:`~agentgym.train.recorded.episode_from_calls`):
the ids the model read and sampled, never re-tokenised text.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agentgym.episode import Episode
from agentgym.harness import ENV_VAR
from agentgym.llm.recording import Recorder
from agentgym.llm.sampling import SamplingSpec
from agentgym.train.episode import TokenEpisode
from agentgym.train.recorded import episode_from_calls
from agentgym.train.rollout import Job, RolloutStats

if TYPE_CHECKING:
    from agentgym.train.config import RolloutConfig

STDERR_TAIL = 2000
"""Characters of a failed harness's stderr kept in its episode's error."""
IDENTITY = {"task_id", "env_id", "sample", "seed", "started_at"}
"""The fields of a harness episode's record the trainer sets: which job it was and when it began."""


@dataclass
class _Running:
    index: int
    job: Job
    session: str
    result: Path
    proc: subprocess.Popen[bytes] | None
    log: Any
    started: float
    thread: threading.Thread | None = None
    error: str | None = None


Harness = str | Callable[[dict[str, Any]], None]
"""A command run once per episode, or a function called with the episode spec in a thread
(an agent in this process: :class:`agentgym.harness.HarnessEpisode` takes the spec too)."""


class HarnessRollouts:
    """The gateway over ``engine`` and the harness processes run through it."""

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
    ) -> None:
        from agentgym.llm.server import ServerThread, create_app

        self.function = command if callable(command) else None
        self.argv = [] if callable(command) else shlex.split(command)
        if not callable(command) and not self.argv:
            raise ValueError("rollout.harness is empty: give the command that runs the agent")
        self.env_id, self.env_kwargs = env_id, dict(env_kwargs or {})
        self.parallel, self.timeout_s = parallel, timeout_s
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.recorder = Recorder(
            self.directory / "gateway.db", open_sessions=False, policy_version=policy_version
        )
        app = create_app(engine, "policy", request_timeout_s=timeout_s, recorder=self.recorder)
        self.server = ServerThread(app)
        self.url = self.server.url
        self._episodes = 0

    def collect(
        self, jobs: list[Job], rollout: RolloutConfig, sampling: SamplingSpec
    ) -> tuple[list[TokenEpisode], RolloutStats]:
        """Run the harness once per job (``parallel`` at a time); episodes in job order, each
        at most ``rollout.max_turns`` turns, its actions asked for as ``sampling`` says."""
        stats, started = RolloutStats(episodes=len(jobs)), time.perf_counter()
        out: list[TokenEpisode | None] = [None] * len(jobs)
        pending = list(enumerate(jobs))
        running: list[_Running] = []
        with tempfile.TemporaryDirectory(prefix="harness-", dir=self.directory) as tmp:
            while pending or running:
                while pending and len(running) < self.parallel:
                    i, job = pending.pop(0)
                    running.append(self._start(i, job, rollout.max_turns, sampling, Path(tmp)))
                time.sleep(0.02)
                for r in [r for r in running if self._over(r)]:
                    running.remove(r)
                    out[r.index] = self._finish(r)
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
        self._episodes += 1
        session = f"ep{self._episodes}-{job.task.id}-{job.sample}"[:180]
        self.recorder.open(session, max_calls=4 * max_turns + 8)
        result = tmp / f"{self._episodes}.result.json"
        spec = {
            "base_url": self.url,
            "session": session,
            "model": "policy",
            "sampling": _sampling(sampling),
            "max_turns": max_turns,
            "env_id": self.env_id,
            "env_kwargs": self.env_kwargs,
            "task": job.task.model_dump(mode="json"),
            "seed": job.seed,
            "result": str(result),
        }
        if self.function is not None:
            running = _Running(index, job, session, result, None, None, time.time())
            running.thread = threading.Thread(target=self._call, args=(running, spec), daemon=True)
            running.thread.start()
            return running
        spec_path = tmp / f"{self._episodes}.episode.json"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        log = open(tmp / f"{self._episodes}.stderr", "w+b")  # noqa: SIM115 (closed in _finish)
        env = os.environ | {ENV_VAR: str(spec_path), "OMP_NUM_THREADS": "1"}
        argv = [sys.executable if a == "python" else a for a in self.argv]
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=log)
        return _Running(index, job, session, result, proc, log, time.time())

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
            r.proc.wait()
            return True
        return False

    def _finish(self, r: _Running) -> TokenEpisode:
        record = Episode(
            task_id=r.job.task.id,
            env_id=self.env_id,
            sample=r.job.sample,
            seed=r.job.seed,
            started_at=r.started,
            instruction=r.job.task.instruction,
        )
        why = r.error
        if r.proc is not None:
            r.log.seek(0)
            stderr = r.log.read().decode("utf-8", "replace")[-STDERR_TAIL:]
            r.log.close()
            code = r.proc.returncode
            if code != 0:
                why = f"timed out after {self.timeout_s:g} s" if code == -9 else f"exited {code}"
                why += f": {stderr}"
        if why is None and not r.result.is_file():
            why = "wrote no result (call HarnessEpisode.finish() at the end)"
        played = None
        if why is None:
            try:
                played = Episode.model_validate_json(r.result.read_bytes())
            except ValidationError as e:
                first = e.errors()[0]
                where = ".".join(str(part) for part in first["loc"])
                why = f"its result is not an episode record: {where}: {first['msg']}"
        calls = self.recorder.calls(r.session)
        self.recorder.forget(r.session)
        if why is not None or played is None:
            record.fail(f"harness failed: {why}")
            return TokenEpisode(episode=record, group=r.job.group)
        # the env's outcome as the harness recorded it; who played it as the trainer knows it
        record = played.model_copy(update=record.model_dump(include=IDENTITY))
        if not calls:
            record.fail("the harness made no call to the gateway")
        return episode_from_calls(calls, record, r.job.group)

    def close(self) -> None:
        self.server.stop()
        self.recorder.close()


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
