"""A torchrun entry for the data-parallel test: several ``agentgym train`` runs in one group.

``python -m torch.distributed.run --standalone --nproc-per-node N tests/data_parallel_ranks.py
CONFIG...`` joins the ranks' gloo group once, registers the NoOp test env, and runs each config
through :func:`agentgym.train.cli.run_train`, what ``agentgym train`` runs on every rank; one
launch for every algorithm keeps the test to one start of N Python processes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch.distributed as dist
from rich.console import Console

import agentgym
from agentgym.testing.noop import register_test_envs
from agentgym.train.cli import run_train
from agentgym.train.config import load_config


def main(configs: list[str]) -> None:
    tree = Path(__file__).resolve().parents[1]
    if Path(agentgym.__file__).resolve().parents[1] != tree:  # an installed copy, not this tree
        raise SystemExit(f"the ranks import {agentgym.__file__}: put {tree} on PYTHONPATH")
    register_test_envs()
    dist.init_process_group("gloo")
    try:
        for path in configs:
            run_train(load_config(Path(path), []), Console(quiet=True))
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1:])
