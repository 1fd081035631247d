"""The same GRPO run trained in process and through the recording gateway by an agent program.

A tiny model, SFT'd a little on NoOp's expert (it says ``noop`` some of the time), then GRPO for
``--steps`` steps twice from that checkpoint: once with the trainer's own rollouts, once with
``rollout.harness`` running ``examples/harnesses/chat_loop.py`` (the same chat loop as an
external program) per episode. Held-out success before and after is each run's own agent on
held-out NoOp tasks; seconds per step is the mean step time. Prints a markdown table.

    python benchmarks/harness_rollouts.py --out /tmp/harness-bench --steps 8
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()


def play() -> None:
    """The harness: the chat loop (its env steps in the trainer)."""
    sys.path.insert(0, str(HERE.parents[1] / "examples" / "harnesses"))
    from chat_loop import play as chat_loop

    chat_loop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="where the runs go (required)")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--play", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.play:
        return play()
    if args.out is None:
        parser.error("--out DIR is required")

    import torch

    from agentgym.llm.tiny import TinyModelConfig, init_model
    from agentgym.task import write_tasks
    from agentgym.testing.noop import noop_suite
    from agentgym.train.config import TrainConfig
    from agentgym.train.trainer import Trainer

    torch.set_num_threads(1)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    tasks = noop_suite(16, length=2).tasks
    write_tasks(out / "train.jsonl", tasks[:10])
    write_tasks(out / "heldout.jsonl", tasks[10:])
    tiny = out / "tiny"
    if not (tiny / "config.json").is_file():
        init_model(tiny, TinyModelConfig(vocab_size=1024, hidden_size=64, intermediate_size=128))

    def cfg(name: str, **over: object) -> TrainConfig:
        base: dict = {
            "model": {"path": str(tiny)},
            "env": {
                "id": "NoOp-v0",
                "suite": str(out / "train.jsonl"),
                "eval_suite": str(out / "heldout.jsonl"),
                "system_prompt": False,
            },
            "rollout": {"tasks_per_step": 4, "group_size": 4, "max_turns": 2, "max_tokens": 4},
            "optim": {"lr": 3e-3, "micro_batch_size": 8},
            "sft": {"batch_size": 6},
            "steps": args.steps,
            "seed": 0,
            "out_dir": str(out / name),
            "eval_temperature": 1.0,
            "eval_samples": 8,
            "threads": 1,
        }
        for key, value in over.items():
            node = base
            *parents, leaf = key.split(".")
            for p in parents:
                node = node.setdefault(p, {})
            node[leaf] = value
        return TrainConfig.model_validate(base)

    sft_final = out / "sft" / "final"
    if not (sft_final / "config.json").is_file():
        trainer = Trainer(cfg("sft", **{"algo.name": "sft", "steps": 21, "optim.lr": 1e-2}))
        trainer.run()
        trainer.close()

    rows = []
    harness = f"python {HERE} --play"
    for label, over in (
        ("in process (chat loop)", {}),
        ("harness (chat_loop.py)", {"rollout.harness": harness}),
    ):
        name = "harness" if over else "inprocess"
        trainer = Trainer(cfg(name, **{"model.path": str(sft_final), "resume": False, **over}))
        started = time.perf_counter()
        before = trainer.evaluate()
        trainer.run()
        after = trainer.evaluate()
        wall = time.perf_counter() - started
        step_s = [row["step_s"] for row in trainer.history if "step_s" in row]
        trainer.close()
        rows.append(
            {
                "run": label,
                "before": before["eval_success"],
                "after": after["eval_success"],
                "n": int(after["eval_n"]),
                "errors": int(before["eval_errors"] + after["eval_errors"]),
                "step_s": statistics.mean(step_s),
                "reward_last": trainer.history[-1]["reward"],
                "errors_train": int(sum(row["errors"] for row in trainer.history)),
                "wall_s": wall,
            }
        )
    print(json.dumps(rows))
    print(
        "| rollouts | held-out success before | after | episodes | errors | s / step (mean) "
        "| last step reward |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['run']} | {r['before']:.3f} | {r['after']:.3f} | {r['n']} | {r['errors']} | "
            f"{r['step_s']:.1f} | {r['reward_last']:.3f} |"
        )


if __name__ == "__main__":
    main()
