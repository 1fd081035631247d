"""Carry a long run across machines in git: its stored results and its newest checkpoints.

A session may start on a new machine, where ``/work/runs`` is gone (a household RL run once
lost four RL steps and a 117-episode evaluation that way). ``snapshot`` writes what a run folder holds into a folder
of the git tree, small and diff-stable; ``restore`` puts it back, so the same resumable command
goes on from there:

- each store (``eval.db``, ``train.db``, ``dagger.db``), in a folder of its stem (``eval/``: git
  ignores ``*.db``): its runs (``runs.json``) and, per run, its episodes as gzipped JSONL
  (``agentgym export``'s rows with the task's tags) and its training metrics;
- each training folder named (``rl-1``, ``sft``): its newest ``step-N`` checkpoint (adapters,
  optimizer, RNG states: the step resumes exactly), or its ``final`` once the run has one; the
  one before is dropped (each costs git about 20 MB: see ``experiments/commit_snapshots.sh``).
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
from pathlib import Path
from typing import Any

from agentgym.episode import Episode
from agentgym.llm.models import TOKENIZER_FILES
from agentgym.store import Store
from agentgym.train import checkpoint

STORES = ("eval.db", "train.db", "dagger.db")
RUN_FIELDS = ("id", "name", "suite", "agent", "config", "versions", "git_sha")


def _write_if_changed(path: Path, data: bytes) -> None:
    """Write ``data`` unless the file already holds it (an unchanged run makes no git change)."""
    if not path.is_file() or path.read_bytes() != data:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _gzip(text: str) -> bytes:
    """Gzip with no timestamp or name, so the same text gives the same bytes."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as f:
        f.write(text.encode("utf-8"))
    return buf.getvalue()


def snapshot_store(db: Path, to: Path) -> int:
    """``db``'s runs, episodes and training metrics under ``to``; returns the episodes kept."""
    store = Store(db, read_only=True)
    runs = store.runs()
    kept = 0
    for run in runs:
        tags = {(r["task_id"], r["sample"]): r["tags"] for r in store.episode_rows(run["id"])}
        lines = [
            json.dumps({"tags": tags[e.task_id, e.sample], **e.model_dump()})
            for e in store.episodes(run["id"])
        ]
        kept += len(lines)
        _write_if_changed(to / f"{run['id']}.jsonl.gz", _gzip("".join(f"{x}\n" for x in lines)))
        metrics = store.train_metrics(run["id"])
        if metrics:
            _write_if_changed(to / f"{run['id']}.metrics.json", json.dumps(metrics).encode())
    rows = [{k: r[k] for k in RUN_FIELDS} for r in runs]
    _write_if_changed(to / "runs.json", json.dumps(rows, indent=1, sort_keys=True).encode())
    store.close()
    return kept


def restore_store(src: Path, db: Path) -> int:
    """Put ``src``'s runs back into ``db`` (made if absent); episodes and metrics the store
    already has are left as they are. Returns the episodes added."""
    store = Store(db)
    added = 0
    for run in json.loads((src / "runs.json").read_text()):
        store.start_run(*(run[k] for k in RUN_FIELDS))
        done = store.finished(run["id"])
        episodes = src / f"{run['id']}.jsonl.gz"
        for line in gzip.decompress(episodes.read_bytes()).decode("utf-8").splitlines():
            row = json.loads(line)
            tags = row.pop("tags")
            episode = Episode.model_validate(row)
            if (episode.task_id, episode.sample) not in done:
                store.save_episode(run["id"], episode, tags)
                added += 1
        metrics = src / f"{run['id']}.metrics.json"
        if metrics.is_file():
            have = {m["step"] for m in store.train_metrics(run["id"])}
            by_step: dict[int, dict[str, float]] = {}
            written: dict[int, float] = {}
            for m in json.loads(metrics.read_text()):
                if m["step"] not in have:
                    by_step.setdefault(m["step"], {})[m["name"]] = m["value"]
                    written[m["step"]] = m["time"]
            for step, values in sorted(by_step.items()):
                store.save_train_metrics(run["id"], step, values, at=written[step])
    store.close()
    return added


def name_base(folder: Path, base: str) -> None:
    """Name the adapters' base model ``base`` (a name any machine resolves, such as
    ``smollm2``) instead of this machine's cache path."""
    config = folder / "adapter_config.json"
    if config.is_file():
        data = json.loads(config.read_text())
        data["base_model_name_or_path"] = base
        config.write_text(json.dumps(data, indent=2) + "\n")


def _copy_checkpoint(source: Path, to: Path, base: str | None) -> None:
    """Copy a checkpoint folder (replacing ``to``), its base named ``base`` if given; then the
    base's tokenizer serves it, so no copy of the tokenizer is kept."""
    if to.exists():
        shutil.rmtree(to)
    skipped = (*TOKENIZER_FILES, "chat_template.jinja") if base else ()
    shutil.copytree(source, to, ignore=shutil.ignore_patterns(*skipped))
    if base:
        name_base(to, base)


def snapshot_training(folder: Path, to: Path, base: str | None) -> list[str]:
    """``folder``'s ``final`` into ``to`` once it has one (a finished run resumes from nothing
    else), else its newest ``step-N``; what ``to`` held before is removed. Returns what was
    copied."""
    copied: list[str] = []
    newest = folder / "final" if (folder / "final").is_dir() else checkpoint.latest(folder)
    if newest is not None and not (to / newest.name / checkpoint.STATE_FILE).is_file():
        _copy_checkpoint(newest, to / newest.name, base)
        copied.append(newest.name)
    for old in to.glob("*"):
        if newest is None or old.name != newest.name:
            shutil.rmtree(old)
    return copied


def snapshot(out: Path, to: Path, training: list[str], base: str | None = None) -> dict[str, Any]:
    """Everything of ``out`` that a new machine needs to go on, into ``to``."""
    report: dict[str, Any] = {}
    for name in STORES:
        if (out / name).is_file():
            report[name] = snapshot_store(out / name, to / Path(name).stem)
    for name in training:
        if (out / name).is_dir():
            report[name] = snapshot_training(out / name, to / name, base)
    return report


def restore(src: Path, out: Path) -> dict[str, Any]:
    """Put a snapshot back into ``out``: stores merged, checkpoints copied where ``out`` has
    none newer."""
    report: dict[str, Any] = {}
    out.mkdir(parents=True, exist_ok=True)
    for name in STORES:
        if (src / Path(name).stem / "runs.json").is_file():
            report[name] = restore_store(src / Path(name).stem, out / name)
    stores = {Path(name).stem for name in STORES}
    for folder in sorted(p for p in src.iterdir() if p.is_dir() and p.name not in stores):
        ours = checkpoint.latest(out / folder.name)
        for saved in sorted(folder.iterdir()):
            is_newer = saved.name == "final" or ours is None or saved.name > ours.name
            if is_newer and not (out / folder.name / saved.name).exists():
                shutil.copytree(saved, out / folder.name / saved.name)
                report.setdefault(folder.name, []).append(saved.name)
    return report
