"""Teach a chat model to follow ALSO's ``Strategy:`` line: SFT on the strategy follower's play.

ALSO steers a negotiator through one ``Strategy:`` line per turn; the arms can only differ if the
negotiator writes valid moves and acts on that line. Untuned, SmolLM2-135M does neither reliably,
so this records the scripted strategy follower (``scripted:follower``: its offers, concessions
and talk follow the line's words) on the social negotiation tasks that the ALSO run does not
play, each agent turn under an arm drawn uniformly from the 13, as the chat a model sees through
``ChatAgent`` (system prompt, observations with their ``Strategy:`` line, the follower's replies
as the assistant's), and fine-tunes LoRA on it. Then ALSO steers the tuned model:

    python -m experiments.also_sft --model smollm2 --out OUT
    python -m experiments.also --base "hf:OUT/sft/final?max_tokens=48" --seeds 1 --episodes 10 ...
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

import agentgym
from agentgym.agent import agent_factory
from agentgym.agents.also import STRATEGY_SETS
from agentgym.chat_agent import ChatAgent, ChatAgentConfig
from agentgym.task import Task, TaskSuite
from agentgym.testing import ScriptedClient
from experiments import also, kit

ARMS = STRATEGY_SETS[13]


def training_tasks(also_seeds: int, also_episodes: int) -> list[Task]:
    """The negotiation tasks the ALSO run with these flags does not play (its held-out ones)."""
    drawn = also.draw_tasks(also.parse_args(["--seeds", str(also_seeds), "--episodes",
                                             str(also_episodes)]))  # fmt: skip
    held_out = {t.id for tasks in drawn.values() for t in tasks}
    return [t for t in TaskSuite.load("social/negotiation") if t.id not in held_out]


def follower_chat(env: Any, task: Task, seed: int, rng: np.random.Generator) -> dict[str, Any]:
    """One episode of the follower under a random arm per turn, as ChatAgent's messages."""
    follower = agent_factory(also.FOLLOWER)(env)  # reads the env's state and the last message
    agent = ChatAgent(
        ScriptedClient(lambda request: follower.act(request.messages[-1]["content"], {})),
        env,
        ChatAgentConfig(max_tokens=48),
    )
    obs, info = env.reset(seed=seed, options={"task": task})
    agent.reset({**info, "seed": seed})
    follower.reset(info)
    done, arms = False, []
    while not done:
        arm = int(rng.integers(len(ARMS)))
        text = ARMS[arm][1]
        action = agent.act(f"Strategy: {text}\n{obs}" if text else obs, info)
        obs, _, terminated, truncated, info = env.step(action.text)
        done = terminated or truncated
        arms.append(arm)
    if agent.format_errors:
        raise RuntimeError(f"{task.id}: the follower's reply did not parse as an action")
    return {"task_id": task.id, "arms": arms, "messages": agent.messages}


def record(args: argparse.Namespace, path: Path) -> list[dict[str, Any]]:
    """The follower's chats on every training task, ``--per-task`` episodes each (kept in
    ``path``; a kept file is read, not recorded again)."""
    if path.is_file():
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    env = agentgym.make("Social-v0", partner=also.partner_spec(args))
    rng = np.random.default_rng(args.seed)
    rows = [
        follower_chat(env, task, args.seed * 100_000 + 10 * i + k, rng)
        for i, task in enumerate(training_tasks(args.also_seeds, args.also_episodes)[: args.tasks])
        for k in range(args.per_task)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return rows


def sft_config(args: argparse.Namespace, data: Path, out: Path) -> Any:
    """LoRA SFT of ``args.model`` on the recorded chats (no evaluation: ALSO's run is that)."""
    from agentgym.train.config import TrainConfig

    return TrainConfig.model_validate(
        {
            "model": {"path": args.model, "lora": kit.lora_settings(args)},
            "env": {"id": "Social-v0"},
            "algo": {"name": "sft"},
            "sft": {"data": str(data), "batch_size": args.sft_batch, "context_weight": 0.0},
            "optim": {"lr": args.lr, "micro_batch_size": args.micro_batch},
            "steps": args.steps,
            "seed": args.seed,
            "out_dir": str(out),
            "threads": args.threads,
        }
    )


def main(argv: list[str] | None = None) -> Path:
    args = parser().parse_args(argv)
    from agentgym.train.trainer import Trainer

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = record(args, out / "follower.jsonl")
    turns = sum(len(r["arms"]) for r in rows)
    print(f"{len(rows)} follower episodes, {turns} agent turns, from {out / 'follower.jsonl'}")
    started = time.perf_counter()
    trainer = Trainer(sft_config(args, out / "follower.jsonl", out / "sft"))
    trainer.run()
    trainer.close()
    nll = [h["nll"] for h in trainer.history if "nll" in h]
    print(
        f"SFT: {args.steps} steps in {time.perf_counter() - started:.0f} s, action NLL "
        f"{nll[0]:.3f} at the first step, {nll[-1]:.3f} at the last; the negotiator: "
        f"hf:{out / 'sft' / 'final'}"
    )
    return out / "sft" / "final"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--out", required=True, help="the chats and the tuned adapter go here")
    p.add_argument("--tasks", type=int, default=None, help="only the first N training tasks")
    p.add_argument("--per-task", type=int, default=1, help="follower episodes per task")
    p.add_argument("--also-seeds", type=int, default=1, help="the ALSO run's --seeds")
    p.add_argument("--also-episodes", type=int, default=10, help="the ALSO run's --episodes")
    p.add_argument("--switch", type=int, default=10, help="the partner's switch turn")
    p.add_argument("--partner", default="switcher")
    p.add_argument("--steps", type=int, default=24, help="SFT steps of --sft-batch chats")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    kit.add_pretrained_flags(p, max_context=None)
    p.set_defaults(model="smollm2")
    return p


if __name__ == "__main__":
    main()
