"""One episode as the episode page shows it: a conversation of typed parts.

Each step is the agent's action (plain text or tool calls), the env's answer (text, a JSON tool
result, or a command's return code and output), reward, info, latencies and usage. Dialogue and
judge scores that multi-agent envs put in ``info`` are lifted out so the page can show them as a
conversation and a score table; training steps with token ids get their tokens and loss mask.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentgym.viewer.db import StoreReader
from agentgym.viewer.tokens import token_pieces

_COMMAND = re.compile(r"^<returncode>(-?\d+)</returncode>\s*<output>\n?(.*?)</output>\s*$", re.S)
DIALOGUE_KEYS = ("dialogue", "messages", "transcript", "conversation")
SCORE_KEYS = ("judge", "scores", "judge_scores", "evaluation")


def episode(db: StoreReader, run_id: str, task_id: str, sample: int) -> dict[str, Any]:
    """The episode, its steps and its neighbours in task order; KeyError if it is not stored."""
    row = db.one(
        "select e.*, r.agent, r.suite, r.name as run_name from episodes e join runs r "
        "on r.id = e.run_id where run_id = ? and task_id = ? and sample = ?",
        [run_id, task_id, sample],
    )
    if row is None:
        raise KeyError(f"no episode ({task_id!r}, sample {sample}) in run {run_id!r}")
    row["success"], row["tags"] = bool(row["success"]), json.loads(row["tags"] or "[]")
    steps = db.query(
        "select * from steps where run_id = ? and task_id = ? and sample = ? order by t",
        [run_id, task_id, sample],
    )
    row["steps"] = [step_view(s, row["agent"]) for s in steps]
    row["prev"], row["next"] = _neighbours(db, run_id, task_id, sample)
    return row


def _neighbours(db: StoreReader, run_id: str, task_id: str, sample: int) -> list[Any]:
    sql = (
        "select task_id, sample from episodes where run_id = ? and (task_id, sample) {op} (?, ?) "
        "order by task_id {d}, sample {d} limit 1"
    )
    args = [run_id, task_id, sample]
    return [
        db.one(sql.format(op="<", d="desc"), args),
        db.one(sql.format(op=">", d="asc"), args),
    ]


def step_view(s: dict[str, Any], agent: str) -> dict[str, Any]:
    """A stored step row turned into the parts the page draws."""
    info = json.loads(s["info"] or "{}")
    usage = json.loads(s["usage"] or "{}")
    return {
        "t": s["t"],
        "action": s["action"],
        "tool_calls": tool_calls(s["action"]),
        "observation": s["observation"],
        "command": command_output(s["observation"]),
        "observation_json": _json_or_none(s["observation"]),
        "reward": s["reward"],
        "terminated": bool(s["terminated"]),
        "truncated": bool(s["truncated"]),
        "valid": bool(s["valid"]),
        "info": info,
        "dialogue": dialogue(info),
        "scores": scores(info),
        "agent_latency_s": s["agent_latency_s"],
        "env_latency_s": s["env_latency_s"],
        "prompt_tokens": usage.get("prompt_tokens", 0),
        "completion_tokens": usage.get("completion_tokens", 0),
        "cost": usage.get("cost", 0.0),
        "tokens": _tokens(usage, agent),
    }


def tool_calls(action: str) -> list[dict[str, Any]] | None:
    """``{"name", "arguments"}`` JSON actions (one or a list), as ChatAgent writes tool calls."""
    value = _json_or_none(action)
    calls = value if isinstance(value, list) else [value]
    if value is None or not calls:
        return None
    if all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in calls):
        return [{"name": c["name"], "arguments": c.get("arguments", {})} for c in calls]
    return None


def command_output(observation: str) -> dict[str, Any] | None:
    """SWE observations ``<returncode>N</returncode><output>...</output>`` split in two."""
    m = _COMMAND.match(observation)
    return {"returncode": int(m.group(1)), "output": m.group(2)} if m else None


def dialogue(info: dict[str, Any]) -> list[dict[str, str]] | None:
    """Messages under a dialogue key of ``info``: lists of {speaker|role|name, content|text}."""
    for key in DIALOGUE_KEYS:
        msgs = info.get(key)
        if isinstance(msgs, list) and msgs and all(isinstance(m, dict) for m in msgs):
            return [
                {
                    "speaker": str(m.get("speaker") or m.get("name") or m.get("role") or "?"),
                    "content": str(m.get("content") or m.get("text") or ""),
                }
                for m in msgs
            ]
    return None


def scores(info: dict[str, Any]) -> dict[str, Any] | None:
    """Numeric scores of a judge (or a reward breakdown) found in ``info``, flattened one level."""
    for key in SCORE_KEYS:
        value = info.get(key)
        if isinstance(value, dict):
            nested = value.get("scores")
            inner = nested if isinstance(nested, dict) else value
            found = {k: v for k, v in inner.items() if isinstance(v, (int, float, str))}
            if found:
                return found
    components = (info.get("reward_info") or {}).get("components")
    return dict(components) if isinstance(components, dict) and components else None


def _tokens(usage: dict[str, Any], agent: str) -> list[dict[str, Any]] | None:
    ids = usage.get("token_ids")
    if not ids:
        return None
    mask, logprobs = usage.get("loss_mask"), usage.get("logprobs")
    pieces = token_pieces(agent, ids)
    return [
        {
            "id": tid,
            "text": pieces[i] if pieces else None,
            "mask": mask[i] if mask and i < len(mask) else None,
            "logprob": logprobs[i] if logprobs and i < len(logprobs) else None,
        }
        for i, tid in enumerate(ids)
    ]


def _json_or_none(text: str) -> Any:
    text = text.strip()
    if not text or text[0] not in "[{":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None
