"""``agentgym train CONFIG --nproc N``: the same run on N data-parallel ranks, started by torchrun.

The short form only spells the torchrun command (``--standalone``: one machine, a free port, so
two runs never meet on torchrun's default port); every rank then runs ``agentgym train`` with the
same config and overrides, and :mod:`agentgym.train.distributed` makes it one data-parallel run.
Several machines take torchrun's own form, with ``--nnodes`` and a rendezvous endpoint.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from agentgym.train.distributed import ranks_from_env


def torchrun_command(config: Path | None, overrides: Sequence[str], nproc: int) -> list[str]:
    """``python -m torch.distributed.run`` running ``agentgym.cli train`` on ``nproc`` ranks."""
    if nproc < 1:
        raise ValueError(f"--nproc {nproc}: a run needs at least one process")
    train = ["-m", "agentgym.cli", "train", *([str(config)] if config is not None else [])]
    for override in overrides:
        train += ["--set", override]
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    return [*launcher, f"--nproc-per-node={nproc}", *train]


def launch(config: Path | None, overrides: Sequence[str], nproc: int) -> int:
    """Run the data-parallel training and return torchrun's exit status."""
    if "TORCHELASTIC_RUN_ID" in os.environ or ranks_from_env() > 1:
        raise ValueError("--nproc inside a torchrun rank: torchrun already started the ranks")
    return subprocess.run(torchrun_command(config, overrides, nproc), check=False).returncode
