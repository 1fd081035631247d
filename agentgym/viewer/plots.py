"""Data behind the viewer's plots: success by tag within a run, and success over training steps.

Both reuse ``agentgym.metrics`` (``summarize_by_tag``, ``wilson_interval``); the browser draws them.
A run belongs to a training curve when its config has ``train_step`` or its name or agent names a
step (``.../step-200``, ``ckpt_1000``, ``checkpoint-50``); runs of the same agent with the step
number taken out, on the same suite, form one curve.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from typing import Any

from agentgym.metrics import summarize_by_tag
from agentgym.viewer import queries
from agentgym.viewer.db import StoreReader

_STEP = re.compile(r"(step|ckpt|checkpoint|iter)([-_ =]?)(\d+)", re.IGNORECASE)
_SUMMARY_COLUMNS = "task_id, success, status, score, steps, prompt_tokens, completion_tokens, cost"


def tag_summaries(db: StoreReader, run_id: str) -> list[dict[str, Any]]:
    """``metrics.summarize_by_tag`` over the run's episodes: all, then one row per tag.

    Linear in the run's episodes (about 2 s for 100,000), so it is cached per store version.
    """
    db.run_exists(run_id)
    return db.cached(("summary", run_id), lambda: _tag_summaries(db, run_id))


def _tag_summaries(db: StoreReader, run_id: str) -> list[dict[str, Any]]:
    rows = db.query(f"select {_SUMMARY_COLUMNS}, tags from episodes where run_id = ?", [run_id])
    decoded: dict[str, list[str]] = {}  # a run has few distinct tag lists: parse each once
    for r in rows:
        text = r["tags"] or "[]"
        r["tags"] = decoded.get(text) or decoded.setdefault(text, json.loads(text))
    return [
        asdict(s) | {"success_rate": s.success_rate, "ci95": s.interval}
        for s in summarize_by_tag(rows)
    ]


def train_step(run: dict[str, Any]) -> tuple[int, str] | None:
    """(step, curve label) of a run evaluated at a training step, else None."""
    config = run["config"]
    if isinstance(config.get("train_step"), int):
        return config["train_step"], f"{run['agent']} on {run['suite']}"
    for text in (run["agent"], run["name"]):
        if m := _STEP.search(text):
            label = text[: m.start()] + m.group(1) + m.group(2) + "*" + text[m.end() :]
            return int(m.group(3)), f"{label} on {run['suite']}"
    return None


def training_curves(db: StoreReader) -> list[dict[str, Any]]:
    """One curve per agent family and suite: points (step, success, 95% interval, run id)."""
    curves: dict[str, list[dict[str, Any]]] = {}
    for run in queries.runs(db):
        found = train_step(run)
        if found is None or not run["episodes"]:
            continue
        step, label = found
        curves.setdefault(label, []).append(
            {
                "step": step,
                "run_id": run["id"],
                "episodes": run["episodes"],
                "success_rate": run["success_rate"],
                "ci95": run["ci95"],
            }
        )
    return [
        {"label": label, "points": sorted(points, key=lambda p: p["step"])}
        for label, points in sorted(curves.items())
    ]


TRAIN_CURVES = ("reward", "success", "kl", "entropy", "pg_loss", "nll", "loss")
"""The logged metrics a training page draws, where the run logged them."""


def train_run(db: StoreReader, run_id: str) -> dict[str, Any]:
    """A training run over its steps: every logged metric as ``[step, value]`` points, and the
    held-out evaluations stored at training steps (runs whose config names it as ``train_run``)
    with their 95% Wilson intervals."""
    run = queries.run(db, run_id)
    tables = {r["name"] for r in db.query("select name from sqlite_master where type = 'table'")}
    rows = (
        db.query(
            "select step, name, value from train_metrics where run_id = ? order by step, name",
            [run_id],
        )
        if "train_metrics" in tables
        else []
    )
    metrics: dict[str, list[list[float]]] = {}
    for r in rows:
        metrics.setdefault(r["name"], []).append([r["step"], r["value"]])
    held_out = [
        {
            "step": r["config"]["train_step"],
            "run_id": r["id"],
            "episodes": r["episodes"],
            "success_rate": r["success_rate"],
            "ci95": r["ci95"],
        }
        for r in queries.runs(db)
        if r["config"].get("train_run") == run_id and r["episodes"]
    ]
    return {
        "run": run,
        "metrics": metrics,
        "curves": [name for name in TRAIN_CURVES if name in metrics],
        "held_out": sorted(held_out, key=lambda p: p["step"]),
    }
