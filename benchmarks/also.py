"""ALSO on the offline social setup: mean reward against fixed arms and other bandits.

    python benchmarks/also.py [--seeds 3] [--episodes 12] [--switch 10] [--embedder hash]

Setup (METHODS.md's CPU check): ``agentgym/Social-v0`` on ``social/negotiation`` tasks (both
seats, deal-or-no-deal and craigslist), the rule-based judge, the non-stationary scripted partner
``switcher`` (yields to pressure until turn ``--switch``, then retaliates against it, reacting to
the agent's history), and as the base agent the strategy follower (``scripted:follower``), whose
concessions follow the words of the strategy instruction in its prompt. Every method plays the
same episodes (same tasks, same seeds). Rows:

- ``arm 0``: the persona unchanged every turn (the baseline of the ratios);
- ``best fixed arm``: the arm with the highest mean reward in hindsight, among all 13 fixed arms;
- ``ALSO``: surrogate + EXPO selection (the paper's); ``ALSO exp3``: its importance-weighted
  variant; ``EXP3``: textbook EXP3 (gamma 0.1); ``UCB1``: textbook UCB1 - all restart each episode.

Columns: mean per-turn reward r_t (ALSO's objective: the normalised 7-dimension score after each
of the agent's turns), mean final score, agreement rate, and *recovery*: agent turns after the
partner's switch until r_t is back at its level just before the switch (episodes that never
recover count the turns they had left + 1). Figures are noisy: the machine is shared.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

import agentgym
from agentgym.agents.also import AlsoAgent, AlsoConfig, make_embedder
from agentgym.envs.social.scripted import scripted_agent
from agentgym.task import Task, TaskSuite


@dataclass
class Result:
    """Per-method tallies over all seeds and episodes."""

    rewards: list[float] = field(default_factory=list)
    finals: list[float] = field(default_factory=list)
    agreements: list[bool] = field(default_factory=list)
    recoveries: list[int] = field(default_factory=list)
    seconds: float = 0.0
    turns: int = 0


def episode(
    env, selector: str, task: Task, seed: int, embedder, switch: int, eta: float = 5.0
) -> tuple[list[float], float, bool, int]:
    """One episode; returns per-turn rewards, final score, agreement, recovery turns."""
    config = AlsoConfig(selector=selector, seed=seed, eta=eta)
    agent = AlsoAgent(scripted_agent("follower", env), config, embedder)
    obs, info = env.reset(seed=seed, options={"task": task})
    agent.reset({**info, "seed": seed})
    rewards, turns, done, reward = [], [], False, 0.0
    while not done:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        done = terminated or truncated
        rewards.append(info["evaluation"]["normalized"])
        turns.append(info["turn"])
    return rewards, reward, bool(info.get("agreement")), recovery(rewards, turns, switch)


def recovery(rewards: list[float], turns: list[int], switch: int) -> int:
    """Agent turns after the switch until the reward is back at its pre-switch level."""
    before = [r for r, t in zip(rewards, turns, strict=True) if t <= switch]
    after = [r for r, t in zip(rewards, turns, strict=True) if t > switch]
    if not before or not after:
        return 0
    for i, r in enumerate(after):
        if r >= before[-1] - 1e-9:
            return i
    return len(after) + 1


def run(
    selectors: list[str],
    tasks_per_seed: dict[int, list[Task]],
    switch: int,
    embedder,
    eta: float = 5.0,
) -> dict[str, Result]:
    env = agentgym.make("Social-v0", partner=f"scripted:switcher?switch={switch}")
    results = {s: Result() for s in selectors}
    for selector in selectors:
        res = results[selector]
        start = time.perf_counter()
        for seed, tasks in tasks_per_seed.items():
            for i, task in enumerate(tasks):
                rewards, final, agreed, rec = episode(
                    env, selector, task, seed * 1000 + i, embedder, switch, eta
                )
                res.rewards += rewards
                res.finals.append(final)
                res.agreements.append(agreed)
                res.recoveries.append(rec)
                res.turns += len(rewards)
        res.seconds = time.perf_counter() - start
    return results


def table(results: dict[str, Result], labels: dict[str, str], best: str) -> Table:
    base = np.mean(results["fixed:0"].rewards)
    t = Table(title="ALSO vs fixed arms and bandits (offline social setup)")
    for col in (
        "method",
        "mean r_t",
        "vs arm 0",
        "final score",
        "agreements",
        "recovery (turns)",
        "ms/turn",
    ):
        t.add_column(col, justify="left" if col == "method" else "right")
    order = ["fixed:0", best, "expo", "exp3", "exp3-auer", "ucb1", "mix"]
    for sel in [s for s in order if s in results]:
        res = results[sel]
        mean = np.mean(res.rewards)
        t.add_row(
            labels.get(sel, sel)
            + (f" (arm {best.split(':')[1]})" if sel == best and sel != "fixed:0" else ""),
            f"{mean:.4f}",
            f"{mean / base:.3f}x",
            f"{np.mean(res.finals):.4f}",
            f"{np.mean(res.agreements):.0%}",
            f"{np.mean(res.recoveries):.2f}",
            f"{1000 * res.seconds / max(1, res.turns):.1f}",
        )
    return t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=12, help="episodes per seed")
    parser.add_argument("--switch", type=int, default=10, help="turn at which the partner switches")
    parser.add_argument("--embedder", default="hash", choices=["hash", "minilm", "auto"])
    parser.add_argument("--mix", action="store_true", help="also run ALSO's z-scored mix variant")
    parser.add_argument("--eta", type=float, default=5.0, help="ALSO's eta (0.5..10)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    suite = TaskSuite.load("social/negotiation")
    tasks_per_seed = {
        seed: [
            suite.tasks[i]
            for i in np.random.default_rng(seed).choice(len(suite), args.episodes, replace=False)
        ]
        for seed in range(args.seeds)
    }
    embedder = make_embedder(args.embedder)
    fixed = [f"fixed:{k}" for k in range(13)]
    bandits = ["expo", "exp3", "exp3-auer", "ucb1"] + ["mix"] * args.mix
    results = run(fixed + bandits, tasks_per_seed, args.switch, embedder, args.eta)
    best = max(fixed, key=lambda s: np.mean(results[s].rewards))
    labels = {"fixed:0": "arm 0 (persona only)", best: "best fixed arm in hindsight", "expo": "ALSO",
              "exp3": "ALSO exp3 variant", "exp3-auer": "EXP3", "ucb1": "UCB1", "mix": "ALSO mix variant"}  # fmt: skip
    console = Console(width=150)
    console.print(table(results, labels, best))
    console.print(
        f"{args.seeds} seeds x {args.episodes} episodes, switch at turn {args.switch}, embedder "
        f"{args.embedder}, eta {args.eta:g}; per-seed mean final score of ALSO: "
        + ", ".join(f"{np.mean(v):.4f}" for v in per_seed(results["expo"], args.seeds))
    )


def per_seed(res: Result, seeds: int) -> list[list[float]]:
    """Final scores split by seed (episodes are run seed by seed)."""
    n = len(res.finals) // seeds
    return [res.finals[i * n : (i + 1) * n] for i in range(seeds)]


if __name__ == "__main__":
    main()
