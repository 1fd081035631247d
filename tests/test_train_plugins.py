"""The "adding an algorithm / a credit function" examples of docs/methods.md, run as written:
each registers itself and trains a step of a real (tiny) run through the trainer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from agentgym.task import write_tasks
from agentgym.testing.noop import noop_suite
from agentgym.train.config import TrainConfig, set_dotted
from agentgym.train.trainer import Trainer

DOC = Path(__file__).resolve().parents[1] / "docs" / "methods.md"


def _example(name: str) -> str:
    """The python block after ``<!-- example: NAME -->`` in docs/methods.md."""
    found = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```", DOC.read_text(), re.S)
    assert found, f"docs/methods.md has no {name} example"
    return found.group(1)


def _cfg(model: Path, suite: Path, out: Path, **over: object) -> TrainConfig:
    base = {
        "model": {"path": str(model)},
        "env": {"id": "NoOp-v0", "suite": str(suite), "system_prompt": False},
        "rollout": {"tasks_per_step": 3, "group_size": 4, "max_turns": 2, "max_new_tokens": 4},
        "optim": {"lr": 1e-2, "micro_batch_size": 8},
        "sft": {"batch_size": 6},
        "steps": 1,
        "out_dir": str(out),
        "threads": 1,
    }
    for key, value in over.items():
        set_dotted(base, key, value)
    return TrainConfig.model_validate(base)


@pytest.fixture(scope="module")
def start(tiny_model, tmp_path_factory):
    """A tiny model after brief SFT on NoOp: it succeeds some of the time, so advantages move."""
    root = tmp_path_factory.mktemp("plugins")
    suite = root / "noop.jsonl"
    write_tasks(suite, noop_suite(6, length=2).tasks)
    trainer = Trainer(_cfg(tiny_model, suite, root / "sft", **{"algo.name": "sft", "steps": 21}))
    trainer.run()
    trainer.close()
    return root / "sft" / "final", suite


@pytest.mark.parametrize(
    ("example", "over"),
    [("algorithm", {"algo.name": "reinforce"}), ("credit", {"algo.credit": "raw_return"})],
)
def test_docs_example_trains(example, over, start, tmp_path):
    exec(compile(_example(example), f"docs/methods.md:{example}", "exec"), {})
    model, suite = start
    trainer = Trainer(_cfg(model, suite, tmp_path, **over))
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    metrics = trainer.run()
    trainer.close()
    assert 0.0 < metrics["success"] < 1.0 and metrics["pg_loss"] != 0.0
    assert any(not torch.equal(v, before[k]) for k, v in trainer.model.state_dict().items())


def test_unknown_algorithm_lists_the_registered_ones():
    with pytest.raises(ValueError, match=r"unknown algorithm 'dpo'; registered: .*'gigpo'"):
        TrainConfig.model_validate(
            {"model": {"path": "m"}, "env": {"id": "x"}, "algo": {"name": "dpo"}}
        )
