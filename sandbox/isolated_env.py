"""IsolatedEnv: any registered env, running in a sandbox, driven through the generic worker.

``IsolatedEnv("Clarify-v0", provider="docker")`` starts ``python -m agentgym.sandbox.worker`` as
the main process of a locked-down container (or bubblewrap sandbox), asks it to ``make`` the env,
and forwards ``reset``/``step``/``expert_action`` as JSON lines. The env's code never runs in this
process, so an untrusted third-party env, or a long RL run's env that leaks or crashes, is
contained. If the worker dies, a new one is started, the episode so far is replayed (envs are
deterministic: same task, seed and actions give the same state) and the call is retried once.
Snapshots work the same way, by replay.
"""

from __future__ import annotations

import contextlib
import json
import threading
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from agentgym.env import NoExpert, ResetNeeded, Snapshot, StepResult, TextEnv
from agentgym.sandbox.base import SandboxError
from agentgym.sandbox.config import SandboxConfig
from agentgym.sandbox.providers import get_provider
from agentgym.task import Task

WORKER = ["python3", "-m", "agentgym.sandbox.worker"]
ERRORS: dict[str, type[Exception]] = {
    "ResetNeeded": ResetNeeded,
    "NoExpert": NoExpert,
    "KeyError": KeyError,
    "ValueError": ValueError,
    "TypeError": TypeError,
    "ValidationError": ValueError,
    "TaskFileError": ValueError,
    "FileNotFoundError": FileNotFoundError,
}
"""Worker errors re-raised as the same (or the nearest built-in) exception; others: RemoteError."""


class RemoteError(RuntimeError):
    """The env raised inside the worker; the message carries its type and traceback."""


class AnyConfig(BaseModel):
    """The proxy does not validate configs: the env inside the sandbox does."""

    model_config = ConfigDict(extra="allow")


class WorkerDied(SandboxError):
    """The worker process exited or its sandbox is gone."""


class IsolatedEnv(TextEnv):
    """A TextEnv whose real env lives in a sandbox; same contract, same observations."""

    config_model: ClassVar[type[BaseModel]] = AnyConfig

    def __init__(
        self,
        env_id: str,
        provider: str = "docker",
        sandbox_config: SandboxConfig | None = None,
        env_kwargs: dict[str, Any] | None = None,
        render_mode: str | None = None,
        start_timeout: float = 120.0,
    ) -> None:
        super().__init__(None, render_mode)
        self.env_id, self.env_kwargs = env_id, dict(env_kwargs or {})
        config = sandbox_config or SandboxConfig(memory="2g", workdir_size="64m")
        self.provider = get_provider(provider, config)
        self.start_timeout = start_timeout
        self.restarts = 0
        """How many times a dead worker was replaced."""
        self._handle: str | None = None
        self._channel: Any = None
        self._ids = 0
        self._lock = threading.Lock()
        self._episode: tuple[int | None, dict[str, Any]] | None = None
        self._actions: list[Any] = []
        try:
            self._start()
        except BaseException:
            self._stop()  # no sandbox outlives a failed start
            raise

    # ------------------------------------------------------------------ worker plumbing
    def _start(self) -> None:
        self._channel, self._handle = self.provider.spawn(WORKER)  # type: ignore[attr-defined]
        self._recv(0, self.start_timeout)
        made = self._call("make", env_id=self.env_id, kwargs=self.env_kwargs, retry=False)
        self.system_prompt = made.get("system_prompt", "")  # type: ignore[misc]
        self.env_class = made.get("env_class", "")
        self.suite_name = made.get("suite")  # task data is loaded here; env code never is

    def _recv(self, rid: int, timeout: float) -> dict[str, Any]:
        result: list[bytes] = []
        reader = threading.Thread(target=lambda: result.append(self._read_reply(rid)), daemon=True)
        reader.start()
        reader.join(timeout)
        if not result or not result[0]:
            tail = self._channel.stderr_tail()
            raise WorkerDied(f"the env worker for {self.env_id} did not answer: {tail[-1500:]}")
        msg: dict[str, Any] = json.loads(result[0])
        return msg

    def _read_reply(self, rid: int) -> bytes:
        while True:
            line: bytes = self._channel.recv_line()
            if not line:
                return b""
            try:
                if json.loads(line).get("id") == rid:
                    return line
            except json.JSONDecodeError:
                continue

    def _call(
        self, op: str, retry: bool = True, timeout: float = 600.0, **fields: Any
    ) -> dict[str, Any]:
        with self._lock:
            try:
                reply = self._send(op, timeout, fields)
            except (WorkerDied, ConnectionError, OSError):
                if not retry:
                    raise
                self._replace_worker()
                reply = self._send(op, timeout, fields)
        if reply.get("ok"):
            return reply
        name, message = reply.get("error", ""), reply.get("message", "")
        if name in ERRORS:
            raise ERRORS[name](message)
        raise RemoteError(f"{name} in the isolated env: {message}\n{reply.get('traceback', '')}")

    def _send(self, op: str, timeout: float, fields: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        self._channel.send_line(json.dumps({"id": self._ids, "op": op, **fields}).encode())
        return self._recv(self._ids, timeout)

    def _replace_worker(self) -> None:
        """A new worker in a new sandbox, brought to the current episode's state by replay."""
        self.restarts += 1
        self._stop()
        self._channel, self._handle = self.provider.spawn(WORKER)  # type: ignore[attr-defined]
        self._recv(0, self.start_timeout)
        self._send("make", self.start_timeout, {"env_id": self.env_id, "kwargs": self.env_kwargs})
        if self._episode is not None:
            seed, options = self._episode
            self._send("reset", 600.0, {"seed": seed, "options": options})
            for action in self._actions:
                self._send("step", 600.0, {"action": action})

    def _stop(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(Exception):  # already gone; the reaper handles the rest
                self.provider.remove(self._handle)  # type: ignore[attr-defined]
            self._handle = None

    # ------------------------------------------------------------------ the Env contract
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        gymnasium_seed = seed
        super(TextEnv, self).reset(seed=gymnasium_seed)
        opts = dict(options or {})
        if isinstance(opts.get("task"), Task):
            opts["task"] = opts["task"].model_dump(mode="json")
        reply = self._call("reset", seed=seed, options=opts)
        self._episode, self._actions = (seed, opts), []
        self.task = Task.model_validate(reply["task"])
        self.done, self.last_observation = False, reply["obs"]
        return reply["obs"], reply["info"]

    def step(self, action: str) -> StepResult:
        if self.task is None:
            raise ResetNeeded("call reset() before step()")
        if (
            not isinstance(action, str)
            and action is not None
            and not isinstance(action, (int, float))
        ):
            action = repr(action)  # JSON carries str/number/None; the env answers "invalid"
        reply = self._call("step", action=action)
        self._actions.append(action)
        self.done = reply["terminated"] or reply["truncated"]
        self.last_observation = reply["obs"]
        return reply["obs"], reply["reward"], reply["terminated"], reply["truncated"], reply["info"]

    def expert_action(self) -> str:
        if self.task is None:
            raise ResetNeeded("call reset() before expert_action()")
        return str(self._call("expert_action")["action"])

    def snapshot(self) -> Snapshot:
        """The episode's task, seed and actions; :meth:`restore` replays them in the worker."""
        if self.task is None or self._episode is None:
            raise ResetNeeded("call reset() before snapshot()")
        state = (self._episode, list(self._actions))
        return Snapshot(type(self), self.task, AnyConfig(), state, {}, self.done)

    def restore(self, snapshot: Snapshot) -> None:
        if snapshot.env_type is not type(self):
            raise TypeError(
                f"snapshot of {snapshot.env_type.__name__} cannot restore {type(self).__name__}"
            )
        (seed, options), actions = snapshot.state
        self.reset(seed=seed, options=options)
        for action in actions:
            self.step(action)

    def close(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(Exception):  # closing a dead worker is fine
                self._call("close", retry=False, timeout=10.0)
            self._stop()
        super().close()
