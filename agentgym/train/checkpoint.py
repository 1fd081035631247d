"""Checkpoints that resume exactly: weights via ``save_pretrained``, plus optimizer, extra modules
(value head), RNG states and the step, in ``OUT/step-NNNNNN/``.

Rollout and data order derive from (seed, step), not from a running RNG stream, so a resumed run
draws the same tasks and samples as an uninterrupted one; the RNG states are restored as well
for anything else that draws.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agentgym.llm.engine.base import save_weights

STATE_FILE = "trainer_state.pt"


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
    torch.save(
        {
            "step": step,
            "optimizer": optimizer.state_dict(),
            "extra": {name: m.state_dict() for name, m in extra.items()},
            "rng": {
                "python": random.getstate(),
                "numpy": np.random.get_state(),
                "torch": torch.get_rng_state(),
            },
            "config": config,
        },
        directory / STATE_FILE,
    )
    return directory


def latest(out_dir: str | Path) -> Path | None:
    """The newest ``step-N`` checkpoint under ``out_dir`` that finished writing."""
    root = Path(out_dir)
    found = [
        (int(m.group(1)), p)
        for p in root.glob("step-*")
        if (m := re.fullmatch(r"step-(\d+)", p.name)) and (p / STATE_FILE).is_file()
    ]
    return max(found)[1] if found else None


def load_state(
    directory: Path, optimizer: torch.optim.Optimizer, extra: dict[str, torch.nn.Module]
) -> int:
    """Restore optimizer, extra modules and RNGs from ``directory``; return the step."""
    state = torch.load(directory / STATE_FILE, weights_only=False)
    optimizer.load_state_dict(state["optimizer"])
    for name, module in extra.items():
        module.load_state_dict(state["extra"][name])
    random.setstate(state["rng"]["python"])
    np.random.set_state(state["rng"]["numpy"])
    torch.set_rng_state(state["rng"]["torch"])
    return int(state["step"])


def step_dir(out_dir: str | Path, step: int) -> Path:
    return Path(out_dir) / f"step-{step:06d}"


def save_merged(directory: Path, model: Any, tokenizer: Any) -> Path:
    """A plain checkpoint (LoRA merged into the weights) that loads as ``--agent hf:DIRECTORY``."""
    from agentgym.train.policy import is_peft

    model = model.merge_and_unload() if is_peft(model) else model
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
