"""Train SmolLM2-135M-Instruct with LoRA on Clarify-v0 with TRL's GRPOTrainer, on a CPU.

Multi-turn episodes through ``agentgym.integrations.trl``: the model's sampled tokens are
trained, the env's observation turns are masked out of the loss, the reward is the env's.

    agentgym model fetch smollm2               # once: the checkpoint into the user cache
    python examples/trl_grpo.py                # 2 steps of 4 episodes on this CPU
    python examples/trl_grpo.py --steps 50 --out runs/trl-clarify

The env served elsewhere over OpenEnv (``agentgym env serve Clarify-v0`` on that machine):

    python examples/trl_grpo.py --env openenv:http://HOST:8000

Several GPUs, one process per GPU (each plays its share of the batch in its own envs):

    accelerate launch --multi_gpu --num_processes 4 examples/trl_grpo.py \\
        --steps 200 --batch 8 --generations 8 --out runs/trl-clarify
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is marked experimental


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2", help="known model name or checkpoint folder")
    parser.add_argument(
        "--env", default="Clarify-v0", help="env id (also openenv:http://HOST:PORT)"
    )
    parser.add_argument("--suite", default="clarify/train", help="training tasks")
    parser.add_argument("--tasks", type=int, default=None, help="only the first N tasks")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--batch", type=int, default=4, help="episodes per device per step")
    parser.add_argument("--generations", type=int, default=4, help="episodes per task (group)")
    parser.add_argument("--max-turns", type=int, default=6)
    parser.add_argument("--max-completion", type=int, default=512, help="tokens per episode")
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/trl-grpo")
    args = parser.parse_args()

    import torch
    from peft import LoraConfig
    from transformers import AutoTokenizer
    from trl import GRPOConfig

    from agentgym.integrations.trl import grpo_trainer
    from agentgym.llm.models import resolve_model_path

    cpu = not torch.cuda.is_available()
    if cpu:
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    path = resolve_model_path(args.model)
    config = GRPOConfig(
        output_dir=args.out,
        max_steps=args.steps,
        per_device_train_batch_size=args.batch,
        num_generations=args.generations,
        max_completion_length=args.max_completion,
        learning_rate=args.lr,
        beta=0.0,
        use_cpu=cpu,
        bf16=not cpu,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=args.seed,
    )
    trainer = grpo_trainer(
        path,
        args.env,
        config,
        suite=args.suite,
        limit=args.tasks,
        max_turns=args.max_turns,
        processing_class=AutoTokenizer.from_pretrained(path),
        peft_config=LoraConfig(
            r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"
        ),
    )
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    trainer.save_model(args.out)  # the LoRA adapter
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    print(
        f"{args.steps} steps in {seconds:.0f} s ({seconds / args.steps:.1f} s/step); "
        f"mean env reward per step: {', '.join(f'{r:.3f}' for r in rewards)}; adapter in {args.out}"
    )


if __name__ == "__main__":
    main()
