"""Fingerprints of tiny training runs on every registered algorithm, to show a refactor of the
trainer leaves training bitwise unchanged.

Each run trains a ~0.3M-parameter model (built here, no downloads) for a few steps with a fixed
seed on NoOp-v0 (Clarify-v0 for InfoPO and early experience) and prints a hash of its final
trainable parameters (model and extra modules: value head, router) and of its per-step metrics
(timings left out). Covered: SFT, every registered RL algorithm with KL and held-out evaluation,
the step layout with entropy and two epochs, LoRA, GiGPO's similarity anchors, the bounded context,
PA-MoE on every algorithm that can train it, InfoPO credit and early experience's weighted phases.

    python scripts/train_fingerprint.py /tmp/fp --json before.json    # on the old code
    python scripts/train_fingerprint.py /tmp/fp --against before.json # on the new: exit 1 if any differs
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import torch

from agentgym.task import TaskSuite, write_tasks
from agentgym.testing.noop import noop_suite, register_test_envs
from agentgym.train.algorithm import algorithm_names, get_algorithm
from agentgym.train.config import TrainConfig, set_dotted
from agentgym.train.trainer import Trainer

TIMING = {"step_s", "steps_per_s", "tokens_per_s", "episodes_per_s", "generate_s"}
PA_MOE = {"num_experts": 3, "lora_r": 4, "lora_dropout": 0.0, "router_dim": 16, "window": 3}
CLARIFY = {"id": "Clarify-v0", "suite": "clarify/train", "system_prompt": False}


def digest(tensors: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for name in sorted(tensors):
        h.update(name.encode())
        h.update(tensors[name].detach().cpu().float().numpy().tobytes())
    return h.hexdigest()[:16]


def trained(trainer: Trainer) -> dict[str, torch.Tensor]:
    """The model's state and every extra module's, as the optimiser and checkpoints see them."""
    state = dict(trainer.model.state_dict())
    for name, module in trainer.extra.items():
        state |= {f"extra.{name}.{k}": v for k, v in module.state_dict().items()}
    return state


class Runs:
    """Builds the tiny model and suites once under ``root``; runs and fingerprints configs."""

    def __init__(self, root: Path) -> None:
        from agentgym.llm.tiny import TinyModelConfig, init_model

        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.model = root / "tiny"
        if not (self.model / "config.json").is_file():
            init_model(
                self.model,
                TinyModelConfig(vocab_size=1024, hidden_size=64, intermediate_size=128),
            )
        register_test_envs()
        self.train, self.held_out = root / "noop.jsonl", root / "noop_eval.jsonl"
        write_tasks(self.train, noop_suite(6, length=2).tasks)
        write_tasks(self.held_out, noop_suite(3, length=2).tasks)

    def config(self, name: str, over: dict[str, Any]) -> TrainConfig:
        base: dict[str, Any] = {
            "model": {"path": str(self.model)},
            "env": {"id": "NoOp-v0", "suite": str(self.train), "system_prompt": False},
            "rollout": {"tasks_per_step": 3, "group_size": 4, "max_turns": 2, "max_tokens": 4},
            "optim": {"lr": 3e-3, "micro_batch_size": 8},
            "sft": {"batch_size": 6},
            "steps": 2,
            "seed": 0,
            "out_dir": str(self.root / name),
            "threads": 1,
            "resume": False,
        }
        for key, value in over.items():
            set_dotted(base, key, value)
        shutil.rmtree(base["out_dir"], ignore_errors=True)
        return TrainConfig.model_validate(base)

    def run(self, name: str, over: dict[str, Any]) -> dict[str, str]:
        trainer = Trainer(self.config(name, over))
        try:
            trainer.run()
            rows = [{k: v for k, v in r.items() if k not in TIMING} for r in trainer.history]
            metrics = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:16]
            return {"params": digest(trained(trainer)), "metrics": metrics}
        finally:
            trainer.close()

    def early_experience(self) -> dict[str, str]:
        """IWM then imitation rows (``weight: 0`` context turns) through ``train_phases``."""
        import agentgym
        from agentgym.agents import early_experience as ee
        from agentgym.train.policy import load_model

        env = agentgym.make("Clarify-v0")
        trajs = ee.collect(env, TaskSuite.load("clarify/train").tasks[:2], k=2)
        iwm, imitation = self.root / "iwm.jsonl", self.root / "il.jsonl"
        ee.write_rows(ee.iwm_rows(trajs), iwm)
        ee.write_rows(ee.imitation_rows(trajs), imitation)
        over = {"env": {**CLARIFY, "limit": 2}, "sft.batch_size": 2, "optim.lr": 1e-2}
        final = ee.train_phases(self.config("ee", over), [(str(iwm), 1), (str(imitation), 2)])
        return {"params": digest(load_model(final).state_dict()), "metrics": "-"}


def fingerprints(root: Path) -> dict[str, dict[str, str]]:
    import agentgym.agents.pa_moe.train  # noqa: F401  (registers model.policy: pa_moe)

    runs = Runs(root)
    out = {"sft": runs.run("sft", {"algo.name": "sft", "steps": 21, "optim.lr": 1e-2})}
    base = {"model.path": str(root / "sft" / "final")}
    held_out = {"env.eval_suite": str(runs.held_out), "eval_every": 1}
    rl = [n for n in algorithm_names() if get_algorithm(n).rollouts]
    for name in rl:
        over = {**base, "algo.name": name, "algo.kl_coef": 0.05, **held_out}
        out[name] = runs.run(name, over)
        out[f"{name}_step"] = runs.run(
            f"{name}_step", {**base, "algo.name": name, "algo.layout": "step"}
        )
    out["grpo_step_entropy_epochs"] = runs.run(
        "gse", {**base, "algo.layout": "step", "algo.entropy_coef": 0.01, "algo.epochs": 2}
    )
    out["grpo_lora"] = runs.run("lora", {**base, "model.lora": {"r": 4}})
    out["gigpo_similarity"] = runs.run(
        "gsim", {**base, "algo.name": "gigpo", "algo.anchor": "similarity"}
    )
    out["grpo_bounded_context"] = runs.run(
        "hist", {**base, "algo.layout": "step", "rollout.history": 1}
    )
    pa_moe = {"model.policy": "pa_moe", "model.policy_options": PA_MOE}
    for name in rl:  # every algorithm the config lets train PA-MoE
        over = {**base, **pa_moe, "algo.name": name, "algo.layout": "step", "algo.kl_coef": 0.05}
        try:
            runs.config(f"pm_{name}", over)
        except ValueError:
            continue
        out[f"pa_moe_{name}"] = runs.run(f"pm_{name}", {**over, **held_out})
    infopo = {"credit": "infopo", "options": {"beta": 0.5, "tau": 0.5}}
    out["infopo"] = runs.run(
        "infopo",
        {"env": CLARIFY, "rollout.tasks_per_step": 2, "rollout.group_size": 3, "algo": infopo},
    )
    out["early_experience"] = runs.early_experience()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="scratch folder for the model and the runs")
    parser.add_argument("--json", type=Path, help="write the fingerprints here")
    parser.add_argument(
        "--against", type=Path, help="fingerprints to compare with (exit 1 if any differs)"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    found = fingerprints(args.root)
    old = json.loads(args.against.read_text()) if args.against else {}
    for name, fp in found.items():
        mark = "" if not old else ("  same" if old.get(name) == fp else "  DIFFERS")
        print(f"{name:26s} params {fp['params']}  metrics {fp['metrics']}{mark}")
    if args.json:
        args.json.write_text(json.dumps(found, indent=1) + "\n")
    return int(bool(old) and any(old.get(n) != fp for n, fp in found.items()))


if __name__ == "__main__":
    sys.exit(main())
