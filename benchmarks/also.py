"""ALSO on the offline social setup: mean reward against fixed arms and other bandits.

    python benchmarks/also.py [--seeds 3] [--episodes 12] [--switch 10] [--embedder auto]
                              [--partner switcher] [--eta 5] [--epochs 100] [--extra]

Setup (METHODS.md's CPU check): ``agentgym/Social-v0`` on ``social/negotiation`` tasks (both
seats, deal-or-no-deal and craigslist), the rule-based judge, the scripted partner (default: the
non-stationary ``switcher``: cooperative until turn ``--switch``, rewarding cooperative talk and
punishing firmness; exploitative from then on, punishing softness and yielding to credible
firmness; it reacts to the agent's recent history), and as the base agent the strategy follower
(``scripted:follower``), whose concessions, offers and talk follow the words of the strategy
instruction in its prompt. Every method plays the same episodes (same tasks, same seeds). Rows:

- ``arm 0``: the persona unchanged every turn (the baseline of the ratios and differences);
- ``best fixed arm``: the arm with the highest mean reward in hindsight, among all 13 fixed arms;
- ``best schedule``: reference only, not a method - the best pair (arm before the switch, arm
  after it) in hindsight, both taken among the best fixed arms of each phase (what an agent that
  knew the switch could get);
- ``ALSO``: surrogate + EXPO selection (the paper's, METHODS.md's settings: eta 5, decay 0.9,
  100 epochs); ``ALSO exp3``: its importance-weighted variant; ``EXP3``: textbook EXP3 (gamma
  0.1); ``UCB1``: textbook UCB1 - all restart each episode, as ALSO does. ``--extra`` adds the
  z-scored mix variant, eta 10 (the top of METHODS.md's range) and two documented deviations
  (marked *): arms embedded from the strategy text alone, and the surrogate fitted to the change
  of the judge's score (see :data:`EXTRA` and ``AlsoConfig``).

Columns: mean per-turn reward r_t (ALSO's objective: the normalised 7-dimension score after each
of the agent's turns; averaged per episode, then over episodes) with a 95% interval over
episodes, its paired difference to arm 0 with a 95% interval, mean final score, agreement rate,
share of the agent's turns spent on *firm* arms (those whose instruction makes the follower use
pressure, credibility or argument talk - the ones the switcher rewards after the switch) before
and after the switch, and *recovery*: agent turns after the switch until r_t is back at its level
just before the switch (episodes without turns on both sides of the switch are left out; those
that never recover count the turns they had left + 1). Figures are noisy: the machine is shared.
On 2 shared cores the default run takes about 3 minutes, ``--extra`` about 8.
"""

from __future__ import annotations

import argparse
import itertools
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

import agentgym
from agentgym.agents.also import STRATEGY_SETS, AlsoAgent, AlsoConfig, Embedder, make_embedder
from agentgym.envs.social.scripted import scripted_agent, stance_for
from agentgym.task import Task, TaskSuite

FIRM_TALK = {"pressure", "credibility", "argument"}
FIRM_ARMS = {
    k for k, (_, text) in enumerate(STRATEGY_SETS[13]) if stance_for(text).talk in FIRM_TALK
}
"""Arms whose instruction makes the follower firm (BATNA, self-presentation, rational, controversy)."""


EXTRA = {
    "mix": "ALSO mix variant",
    "expo@eta=10": "ALSO eta=10",
    "expo@arm_text=strategy": "ALSO, arms = strategy text only *",
    "expo@arm_text=strategy&eta=10": "ALSO, strategy text, eta=10 *",
    "expo@arm_text=strategy&reward=delta": "ALSO, strategy text, delta reward *",
}
"""``--extra`` rows: ALSO's options; * marks deviations from METHODS.md (see agents/also.py)."""


@dataclass
class Result:
    """Per-method tallies over all seeds and episodes (episodes in the same order for all)."""

    means: list[float] = field(default_factory=list)
    """Mean r_t of each episode."""
    finals: list[float] = field(default_factory=list)
    agreements: list[bool] = field(default_factory=list)
    recoveries: list[int] = field(default_factory=list)
    firm_before: list[bool] = field(default_factory=list)
    firm_after: list[bool] = field(default_factory=list)
    seconds: float = 0.0
    turns: int = 0


@dataclass
class Episode:
    rewards: list[float]
    turns: list[int]
    arms: list[int]
    final: float
    agreed: bool


class Schedule:
    """A fixed arm before the switch and another after it (the hindsight reference)."""

    def __init__(self, base, before: int, after: int, switch: int) -> None:
        self.base, self.arms, self.switch = base, (before, after), switch
        self.trace: list[dict] = []

    def reset(self, info: dict) -> None:
        self.base.reset(info)

    def act(self, observation: str, info: dict):
        arm = self.arms[info["turn"] >= self.switch]
        self.trace.append({"arm": arm})
        text = STRATEGY_SETS[13][arm][1]
        return self.base.act(f"Strategy: {text}\n{observation}" if text else observation, info)


def make_agent(method: str, env, seed: int, embedder: Embedder, args) -> AlsoAgent | Schedule:
    follower = scripted_agent("follower", env)
    if method.startswith("schedule:"):
        before, after = map(int, method.split(":")[1:])
        return Schedule(follower, before, after, args.switch)
    selector, _, query = method.partition("@")
    options = {"eta": args.eta, "epochs": args.epochs, **dict(parse_qsl(query))}
    config = AlsoConfig.model_validate({"selector": selector, "seed": seed, **options})
    return AlsoAgent(follower, config, embedder)


def episode(env, agent, task: Task, seed: int) -> Episode:
    obs, info = env.reset(seed=seed, options={"task": task})
    agent.reset({**info, "seed": seed})
    rewards, turns, done, reward = [], [], False, 0.0
    while not done:
        turns.append(info["turn"])
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        done = terminated or truncated
        rewards.append(info["evaluation"]["normalized"])
    arms = [step["arm"] for step in agent.trace]
    return Episode(rewards, turns, arms, reward, bool(info.get("agreement")))


def recovery(rewards: list[float], turns: list[int], switch: int) -> int | None:
    """Agent turns after the switch until the reward is back at its pre-switch level."""
    before = [r for r, t in zip(rewards, turns, strict=True) if t < switch]
    after = [r for r, t in zip(rewards, turns, strict=True) if t >= switch]
    if not before or not after:
        return None
    for i, r in enumerate(after):
        if r >= before[-1] - 1e-9:
            return i
    return len(after) + 1


def run(methods: list[str], tasks: dict[int, list[Task]], embedder: Embedder, args) -> dict:
    env = agentgym.make("Social-v0", partner=partner_spec(args))
    results = {m: Result() for m in methods}
    for method in methods:
        res = results[method]
        start = time.perf_counter()
        for seed, seed_tasks in tasks.items():
            for i, task in enumerate(seed_tasks):
                ep_seed = seed * 1000 + i
                ep = episode(env, make_agent(method, env, ep_seed, embedder, args), task, ep_seed)
                tally(res, ep, args.switch)
        res.seconds = time.perf_counter() - start
    return results


def tally(res: Result, ep: Episode, switch: int) -> None:
    res.means.append(float(np.mean(ep.rewards)))
    res.finals.append(ep.final)
    res.agreements.append(ep.agreed)
    if (rec := recovery(ep.rewards, ep.turns, switch)) is not None:
        res.recoveries.append(rec)
    for arm, turn in zip(ep.arms, ep.turns, strict=True):
        (res.firm_before if turn < switch else res.firm_after).append(arm in FIRM_ARMS)
    res.turns += len(ep.rewards)


def partner_spec(args) -> str:
    return f"scripted:{args.partner}" + (
        f"?switch={args.switch}" if args.partner == "switcher" else ""
    )


def interval(values: np.ndarray) -> str:
    """Mean +- the half-width of a normal 95% interval over episodes."""
    half = 1.96 * values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else 0.0
    return f"{values.mean():.4f} ± {half:.4f}"


def table(results: dict[str, Result], labels: dict[str, str], order: list[str]) -> Table:
    base = np.array(results["fixed:0"].means)
    t = Table(title="ALSO vs fixed arms and bandits (offline social setup)")
    columns = ["method", "mean r_t (95% CI)", "vs arm 0", "Δ vs arm 0 (95% CI)", "final score",
               "agreements", "firm arms before/after", "recovery (turns)", "ms/turn"]  # fmt: skip
    for col in columns:
        t.add_column(col, justify="left" if col == "method" else "right")
    for method in order:
        res, means = results[method], np.array(results[method].means)
        rec = f"{np.mean(res.recoveries):.2f} (n={len(res.recoveries)})" if res.recoveries else "-"
        t.add_row(
            labels[method],
            interval(means),
            f"{means.mean() / base.mean():.3f}x",
            interval(means - base),
            f"{np.mean(res.finals):.4f}",
            f"{np.mean(res.agreements):.0%}",
            f"{share(res.firm_before)} / {share(res.firm_after)}",
            rec,
            f"{1000 * res.seconds / max(1, res.turns):.1f}",
        )
    return t


def share(flags: list[bool]) -> str:
    return f"{np.mean(flags):.0%}" if flags else "-"


def main() -> None:
    args = parse_args()
    torch.set_num_threads(1)
    suite = TaskSuite.load("social/negotiation")
    tasks = {
        seed: [
            suite.tasks[i]
            for i in np.random.default_rng(seed).choice(len(suite), args.episodes, replace=False)
        ]
        for seed in range(args.seeds)
    }
    embedder = make_embedder(args.embedder)
    fixed = [f"fixed:{k}" for k in range(13)]
    results = run(fixed, tasks, embedder, args)
    best = max(fixed, key=lambda s: np.mean(results[s].means))
    schedules = best_schedules(results, fixed) if args.partner == "switcher" else []
    results |= run(schedules, tasks, embedder, args)
    best_schedule = max(schedules, key=lambda s: np.mean(results[s].means), default=None)
    bandits = ["expo", "exp3", "exp3-auer", "ucb1"] + (list(EXTRA) if args.extra else [])
    results |= run(bandits, tasks, embedder, args)
    labels = {"fixed:0": "arm 0 (persona only)", best: f"best fixed arm in hindsight (arm {best[6:]})",
              "expo": "ALSO", "exp3": "ALSO exp3 variant", "exp3-auer": "EXP3", "ucb1": "UCB1",
              **EXTRA}  # fmt: skip
    if best_schedule:
        labels[best_schedule] = "best schedule in hindsight (arms {}→{}, reference)".format(
            *best_schedule.split(":")[1:]
        )
    order = list(dict.fromkeys(["fixed:0", best, best_schedule, *bandits]))
    console = Console(width=200)
    console.print(table(results, labels, [m for m in order if m]))
    console.print(
        f"partner {partner_spec(args)}, {args.seeds} seeds x {args.episodes} episodes, embedder "
        f"{type(embedder).__name__}, eta {args.eta:g}, {args.epochs} epochs; per-seed mean r_t "
        f"(ALSO | arm 0 | best fixed): "
        + "; ".join(
            " | ".join(f"{v:.4f}" for v in trio)
            for trio in zip(
                *(per_seed(results[m], args.seeds) for m in ("expo", "fixed:0", best)), strict=True
            )
        )
    )
    console.print(
        "fixed arms, mean r_t: "
        + ", ".join(f"{k}:{np.mean(results[f'fixed:{k}'].means):.4f}" for k in range(13))
    )


def best_schedules(results: dict[str, Result], fixed: list[str], top: int = 3) -> list[str]:
    """Schedules between the ``top`` fixed arms and the firm arms (every ordered pair)."""
    ranked = sorted(fixed, key=lambda s: -np.mean(results[s].means))[:top]
    firm = [f"fixed:{k}" for k in sorted(FIRM_ARMS)]
    arms = {int(s[6:]) for s in ranked + firm}
    return [f"schedule:{a}:{b}" for a, b in itertools.product(sorted(arms), repeat=2) if a != b]


def per_seed(res: Result, seeds: int) -> list[float]:
    """Mean r_t per seed (episodes are run seed by seed)."""
    n = len(res.means) // seeds
    return [float(np.mean(res.means[i * n : (i + 1) * n])) for i in range(seeds)]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=12, help="episodes per seed")
    parser.add_argument("--switch", type=int, default=10, help="turn at which the partner switches")
    parser.add_argument(
        "--partner",
        default="switcher",
        choices=["switcher", "tit-for-tat", "conceder", "hardliner"],
    )
    parser.add_argument("--embedder", default="auto", choices=["hash", "minilm", "auto"])
    parser.add_argument("--eta", type=float, default=5.0, help="ALSO's eta (0.5..10)")
    parser.add_argument("--epochs", type=int, default=100, help="surrogate epochs (METHODS: 100)")
    parser.add_argument("--extra", action="store_true", help="add the rows of EXTRA")
    return parser.parse_args()


if __name__ == "__main__":
    main()
