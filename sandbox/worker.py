"""The generic env worker: any registered env, driven by JSON lines on stdin/stdout.

One protocol for every env, derived from the Env contract (no per-env servers): ``make``,
``reset``, ``step``, ``expert_action``, ``close``. It runs inside a sandbox
(``python -m agentgym.sandbox.worker``); the host side is
:class:`agentgym.sandbox.isolated_env.IsolatedEnv`.

Requests ``{"id": n, "op": ..., ...}``; replies ``{"id": n, "ok": true, ...}`` or
``{"id": n, "ok": false, "error": "<exception class>", "message": ..., "traceback": ...}``.
Values that JSON cannot carry (pydantic models, tuples, sets) are converted on the way out.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any, BinaryIO

PROTOCOL_VERSION = 1


def to_json(value: Any) -> Any:
    """JSON-safe copy of an observation/info value (models dumped, sets and tuples as lists)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_json(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return repr(value)


class Worker:
    """Holds one env and answers requests about it."""

    def __init__(self) -> None:
        self.env: Any = None

    def op_make(self, req: dict[str, Any]) -> dict[str, Any]:
        import agentgym

        self.env = agentgym.make(req["env_id"], **req.get("kwargs", {}))
        env = self.env.unwrapped
        return {
            "protocol": PROTOCOL_VERSION,
            "system_prompt": getattr(env, "system_prompt", ""),
            "env_class": f"{type(env).__module__}:{type(env).__qualname__}",
            "suite": env.suite_name if isinstance(getattr(env, "suite_name", None), str) else None,
        }

    def op_reset(self, req: dict[str, Any]) -> dict[str, Any]:
        obs, info = self._env().reset(seed=req.get("seed"), options=req.get("options"))
        task = self.env.unwrapped.task
        return {"obs": obs, "info": to_json(info), "task": to_json(task)}

    def op_step(self, req: dict[str, Any]) -> dict[str, Any]:
        obs, reward, terminated, truncated, info = self._env().step(req["action"])
        return {
            "obs": obs,
            "reward": float(reward),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "info": to_json(info),
        }

    def op_expert_action(self, req: dict[str, Any]) -> dict[str, Any]:
        return {"action": self._env().unwrapped.expert_action()}

    def op_close(self, req: dict[str, Any]) -> dict[str, Any]:
        if self.env is not None:
            self.env.close()
        return {}

    def op_ping(self, req: dict[str, Any]) -> dict[str, Any]:
        return {"pid": os.getpid()}

    def _env(self) -> Any:
        if self.env is None:
            raise RuntimeError("send 'make' before any other request")
        return self.env

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = getattr(self, f"op_{req.get('op')}", None)
        try:
            if op is None:
                raise ValueError(f"unknown op {req.get('op')!r}")
            return {"id": req.get("id"), "ok": True, **op(req)}
        except Exception as e:
            return {
                "id": req.get("id"),
                "ok": False,
                "error": type(e).__name__,
                "message": str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e),
                "traceback": traceback.format_exc(limit=20),
            }


def serve(inp: BinaryIO, out: BinaryIO) -> None:
    """Answer requests one at a time until stdin closes or a ``close`` request."""
    worker = Worker()
    out.write(json.dumps({"id": 0, "ok": True, "ready": True}).encode() + b"\n")
    out.flush()
    for line in inp:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except json.JSONDecodeError as e:
            reply: dict[str, Any] = {
                "id": None,
                "ok": False,
                "error": "ValueError",
                "message": str(e),
            }
        else:
            reply = worker.handle(req)
        out.write(json.dumps(reply).encode() + b"\n")
        out.flush()
        if reply.get("ok") and req.get("op") == "close":
            return


def main() -> None:
    # Env code that prints must not corrupt the protocol: it gets stderr as its stdout.
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(sys.stdin.buffer, proto_out)


if __name__ == "__main__":
    main()
