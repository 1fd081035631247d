"""Checkpoints that resume exactly: weights via ``save_pretrained``, plus optimizer, extra modules
(value head), RNG states and the step, in ``OUT/step-NNNNNN/``; that state is safetensors plus
JSON (:mod:`agentgym.train.state_file`), never a pickle.

Rollout and data order derive from (seed, step), not from a running RNG stream, so a resumed run
draws the same tasks and samples as an uninterrupted one; the RNG states are restored as well
for anything else that draws.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from agentgym.llm.engine.base import save_weights
from agentgym.train import state_file

STATE_FILE = state_file.STATE
"""Written last: a folder that has it holds a finished checkpoint."""


def save(
    directory: Path,
    model: Any,
    tokenizer: Any,
    optimizer: torch.optim.Optimizer,
    extra: dict[str, torch.nn.Module],
    step: int,
    config: dict[str, Any],
) -> Path:
    """Write a resumable checkpoint; the folder loads with ``from_pretrained`` (or peft)."""
    directory.mkdir(parents=True, exist_ok=True)
    save_weights(model, directory)
    tokenizer.save_pretrained(directory)
    (directory / state_file.PICKLED).unlink(missing_ok=True)  # an earlier version's, now stale
    state_file.write(directory, optimizer, extra, step, config)
    return directory


def latest(out_dir: str | Path) -> Path | None:
    """The newest ``step-N`` checkpoint under ``out_dir`` that finished writing. One an earlier
    version pickled counts too, so that resuming refuses it by name instead of starting over."""
    root = Path(out_dir)
    found = [
        (int(m.group(1)), p)
        for p in root.glob("step-*")
        if (m := re.fullmatch(r"step-(\d+)", p.name))
        and ((p / STATE_FILE).is_file() or (p / state_file.PICKLED).is_file())
    ]
    return max(found)[1] if found else None


def load_state(
    directory: Path, optimizer: torch.optim.Optimizer, extra: dict[str, torch.nn.Module]
) -> int:
    """Restore optimizer, extra modules and RNGs from ``directory``; return the step. A pickled,
    corrupt or unfitting state is :class:`~agentgym.train.state_file.StateRefused`, one line
    naming the file."""
    return state_file.restore(directory, optimizer, extra)


def check_state(directory: Path) -> None:
    """Refuse (:class:`~agentgym.train.state_file.StateRefused`) a checkpoint whose trainer state
    cannot be resumed, before anything loads: a pickled ``trainer_state.pt``, or a JSON or
    safetensors file that is not one."""
    state_file.check(directory)


def step_dir(out_dir: str | Path, step: int) -> Path:
    return Path(out_dir) / f"step-{step:06d}"


def save_merged(directory: Path, model: Any, tokenizer: Any) -> Path:
    """A plain checkpoint (LoRA merged into the weights) that loads as ``--agent hf:DIRECTORY``."""
    from agentgym.train.policy import is_peft

    model = model.merge_and_unload() if is_peft(model) else model
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
