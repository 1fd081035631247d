"""What a negotiator writes under fixed arms: valid moves, agreement moves, deals.

ALSO can only compare arms on a negotiator whose moves count, so before a run with a model as
the base agent this plays a few of the run's tasks under fixed arms and counts them:

    python -m experiments.also_moves --base "hf:OUT/sft/final?max_tokens=48" --arms 0 3
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

import agentgym
from agentgym.agent import agent_factory
from experiments import also


def count_moves(env: Any, base: Any, tasks: list, arm: int, switch: int) -> Counter:
    """Agent turns, valid ones, each action type and deals over ``tasks`` under ``arm`` (the
    harness's own episode loop, then the seat's events in the finished game)."""
    counts: Counter = Counter()
    for i, task in enumerate(tasks):
        ep = also.episode(env, also.Schedule(base, arm, arm, switch), task, i)
        seat = env.unwrapped.config.seat
        for event in (e for e in env.unwrapped.state.game.events if e.seat == seat):
            counts["turns"] += 1
            counts["valid"] += event.valid
            counts[event.action.action_type] += 1
        counts["deals"] += ep.agreed
    return counts


def main(argv: list[str] | None = None) -> dict[int, Counter]:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--base", default=also.FOLLOWER, help="the negotiator: any agent spec")
    p.add_argument("--arms", type=int, nargs="+", default=[0, 3])
    p.add_argument("--episodes", type=int, default=3, help="the first N tasks of the ALSO run")
    p.add_argument("--seeds", type=int, default=1, help="the ALSO run's --seeds")
    p.add_argument("--also-episodes", type=int, default=10, help="the ALSO run's --episodes")
    args = p.parse_args(argv)
    run = also.parse_args(["--seeds", str(args.seeds), "--episodes", str(args.also_episodes)])
    tasks = also.draw_tasks(run)[0][: args.episodes]
    env = agentgym.make("Social-v0", partner=also.partner_spec(run))
    base = agent_factory(args.base)(env)
    out = {arm: count_moves(env, base, tasks, arm, run.switch) for arm in args.arms}
    for arm, c in out.items():
        print(
            f"{args.base}, arm {arm}: {c['valid']}/{c['turns']} valid moves, {c['action']} "
            f"agreement moves, {c['speak']} speech, {c['deals']}/{len(tasks)} deals"
        )
    return out


if __name__ == "__main__":
    main()
