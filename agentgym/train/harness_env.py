"""The env of a harness episode, kept in the trainer and stepped on the program's request.

A harness program gets no task (no gold, no scorer config) and no env of its own: it sends each
action to the gateway (``POST /v1/agentgym/step`` with its session's id and key, the headers of
:attr:`agentgym.harness.HarnessEpisode.headers`), and the trainer steps the env it made and reset,
recording the answer. The episode the trainer trains on is that record: its reward is the env's,
whatever the program claims.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import traceback
from collections.abc import Mapping
from typing import Any

from fastapi import Request  # at module level: FastAPI resolves endpoint annotations here
from pydantic import BaseModel

from agentgym.episode import Episode
from agentgym.llm.recording import KEY_HEADER, SESSION_HEADER, RecordingError, check_session_key
from agentgym.task import Task
from agentgym.traits import traits

STEP_ROUTE = "/v1/agentgym/step"
FINISH_ROUTE = "/v1/agentgym/finish"


class StepRequest(BaseModel):
    """A program's action for its episode's env."""

    action: str


class HostedEpisode:
    """One episode's env, made and reset here; every step the program asks for is recorded."""

    def __init__(
        self,
        env_id: str,
        env_kwargs: Mapping[str, Any],
        task: Task,
        seed: int,
        max_turns: int,
        key_hash: str,
    ) -> None:
        from agentgym.registry import make

        self.env: Any = make(env_id, **env_kwargs)
        self.max_turns, self.key_hash = max_turns, key_hash
        self.record = Episode(task_id=task.id, env_id=env_id, seed=seed, started_at=time.time())
        """What the env answered, recorded as every episode loop records it."""
        observation, info = self.env.reset(seed=seed, options={"task": task})
        self.record.instruction = str(info.get("instruction", ""))
        self.record.first_observation = observation
        self.opening = {"observation": observation, "info": json_safe(info)}
        self.done = self._closed = False
        self._lock = threading.Lock()

    def traits(self) -> dict[str, Any]:
        """What a program needs of the env before its first request."""
        env = self.env.unwrapped
        return {
            "system_prompt": traits(env).system_prompt,
            "free_text_actions": traits(env).free_text_actions,
        }

    def step(self, action: str) -> dict[str, Any]:
        """Step the env and record it; over once the env ends it or ``max_turns`` are played."""
        with self._lock:
            if self.done:
                raise RecordingError(
                    409,
                    f"the episode is over ({len(self.record.steps)} steps played): no more actions",
                    "episode_over",
                )
            try:
                obs, reward, terminated, truncated, info = self.env.step(action)
            except Exception:
                self.record.fail(f"the env failed: {traceback.format_exc()[-2000:]}")
                self.done = True
                raise RecordingError(500, "the env failed on this action", "env_error") from None
            self.record.record_step(
                action, obs, float(reward), bool(terminated), bool(truncated), info
            )
            self.done = self.record.ended or len(self.record.steps) >= self.max_turns
            return {
                "observation": obs,
                "reward": float(reward),
                "terminated": bool(terminated),
                "truncated": bool(truncated),
                "info": json_safe(info),
                "done": self.done,
            }

    def finish(self) -> Episode:
        """End the episode (one the env did not end stopped at ``max_turns``) and close the
        env; the record. Idempotent."""
        with self._lock:
            if not self._closed:
                if not self.record.ended:
                    self.record.status = "limit"
                self.record.duration_s = time.time() - self.record.started_at
                self.done = self._closed = True
                self.env.close()
            return self.record


def add_episode_routes(app: Any, episodes: Mapping[str, HostedEpisode]) -> None:
    """Serve ``episodes`` (by session id) on ``app``: step and finish, for the session's key."""

    def _episode(request: Request) -> HostedEpisode:
        session = request.headers.get(SESSION_HEADER) or ""
        episode = episodes.get(session)
        if episode is None:
            raise RecordingError(
                404,
                f"unknown episode session {session[:40]!r}: send the X-Session-Id header "
                "the trainer gave this program",
                "session_not_found",
            )
        check_session_key(session, episode.key_hash, request.headers.get(KEY_HEADER))
        return episode

    @app.post(STEP_ROUTE)
    async def step(body: StepRequest, request: Request) -> dict[str, Any]:
        return await asyncio.to_thread(_episode(request).step, body.action)

    @app.post(FINISH_ROUTE)
    async def finish(request: Request) -> dict[str, Any]:
        episode = await asyncio.to_thread(_episode(request).finish)
        return {"done": True, "steps": len(episode.steps)}


def json_safe(info: Mapping[str, Any]) -> dict[str, Any]:
    """Info as JSON carries it (a value JSON refuses becomes its repr)."""
    return dict(json.loads(json.dumps(dict(info), default=repr)))
