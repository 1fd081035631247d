"""ALSO on the offline social setup: mean reward against arm 0, fixed arms, EXP3 and UCB1.

    python -m experiments.also [--seeds 3] [--episodes 20] [--switch 10] [--embedder auto]
                              [--partner switcher] [--eta 5] [--epochs 100] [--threads 1]
                              [--all-tasks] [--extra] [--base hf:smollm2] [--schedules fixed]
                              [--bandits expo exp3-auer ucb1]

Setup (docs/methods.md's CPU check): ``agentgym/Social-v0`` on ``social/negotiation`` tasks (both
seats, deal-or-no-deal and craigslist; by default only *contested* ones: every item division and
the bargains whose buyer target is below the seller's - in the other half of the craigslist
tasks the first offer already satisfies both sides and no strategy matters; ``--all-tasks``
keeps them), the rule-based judge, episodes of up to 20 turns (about 10 agent turns), the
scripted partner (default: the non-stationary ``switcher``: cooperative until turn
``--switch`` - cooperative talk makes it concede, firmness makes it harden - then exploitative:
cooperative talk and concessions make it harden, credible firmness makes it concede; it reacts
to the agent's recent history), and as the base agent the strategy follower
(``scripted:follower``), whose concessions, offers and talk follow the words of the strategy
instruction in its prompt (no instruction: a plain negotiator that proposes every turn and
concedes a little). Every method plays the same episodes (same tasks, same seeds). Rows:

- ``arm 0``: the persona unchanged every turn (the baseline of the ratios and differences);
- ``best fixed arm``: the arm with the highest mean reward in hindsight, among all 13 fixed arms;
- ``best schedule``: reference only, not a method - the best pair (arm before the switch, arm
  after it) in hindsight over all 13 x 13 pairs (what an agent told the switch turn could get);
- ``ALSO``: surrogate + EXPO selection with docs/methods.md's settings (eta 5, decay 0.9, 100
  epochs, persona + strategy arm texts, level reward); ``ALSO, centred arms``: the same with
  the documented ``arm_centre`` option (mean arm embedding subtracted); ``ALSO exp3 variant``:
  its importance-weighted option; ``EXP3``: textbook EXP3 (gamma 0.1); ``UCB1``: textbook UCB1
  - all bandits restart each episode, as ALSO does. ``--extra`` adds the rows of :data:`EXTRA`
  (* marks deviations from docs/methods.md, see ``AlsoConfig``).

Columns: mean per-turn reward r_t (ALSO's objective: the normalised 7-dimension score after each
of the agent's turns; averaged per episode, then over episodes) with a 95% interval over
episodes; its paired difference to arm 0 with a 95% interval; mean final score; agreement rate;
agent turns per episode; *firm p*: the probability the method put on *firm* arms (those whose
instruction makes the follower use pressure, credibility or argument talk - the ones the
switcher rewards after the switch, 4 of 13 arms) before the switch and on the 1st..5th agent turn
after it (re-ranking shows as this rising); *recovery*: agent turns after the switch until r_t
is back at its level just before the switch (episodes without turns on both sides of the switch
are left out; those that never recover count the turns they had left + 1). Figures are noisy:
the machine is shared; they are kept in docs/results.md.
"""

from __future__ import annotations

import argparse
import itertools
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

import agentgym
from agentgym.agent import Action, agent_factory
from agentgym.agents.also import STRATEGY_SETS, AlsoAgent, AlsoConfig, Embedder, make_embedder
from agentgym.envs.social.scripted import stance_for
from agentgym.task import Task, TaskSuite

FOLLOWER = "scripted:follower"
"""The default negotiator: the strategy follower (docs/methods.md's CPU check)."""
FIRM_TALK = {"pressure", "credibility", "argument"}
FIRM_ARMS = sorted(
    k for k, (_, text) in enumerate(STRATEGY_SETS[13]) if stance_for(text).talk in FIRM_TALK
)
"""Arms whose instruction makes the follower firm (BATNA, self-presentation, rational, controversy)."""
AFTER = 5
"""Agent turns after the switch shown in the *firm p* column."""
BANDITS = {
    "expo": "ALSO (docs/methods.md settings)",
    "expo@arm_centre=true": "ALSO, centred arm embeddings",
    "exp3": "ALSO exp3 variant",
    "exp3-auer": "EXP3",
    "ucb1": "UCB1",
}
EXTRA = {
    "mix": "ALSO mix variant",
    "expo@eta=10": "ALSO eta=10",
    "expo@arm_centre=true&eta=10": "ALSO, centred arms, eta=10",
    "expo@arm_text=strategy": "ALSO, arms = strategy text only *",
    "expo@arm_centre=true&reward=delta": "ALSO, centred arms, delta reward *",
}
"""``--extra`` rows: ALSO's options; * marks deviations from the paper (see agents/also.py)."""


@dataclass
class Result:
    """Per-method tallies over all seeds and episodes (episodes in the same order for all)."""

    means: list[float] = field(default_factory=list)
    """Mean r_t of each episode."""
    finals: list[float] = field(default_factory=list)
    agreements: list[bool] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    recoveries: list[int] = field(default_factory=list)
    firm_before: list[float] = field(default_factory=list)
    firm_after: list[list[float]] = field(default_factory=lambda: [[] for _ in range(AFTER)])
    seconds: float = 0.0


@dataclass
class Episode:
    rewards: list[float]
    turns: list[int]
    firm: list[float]
    """Probability on firm arms at each agent turn."""
    final: float
    agreed: bool


class Schedule:
    """A fixed arm before the switch and another after it (fixed arms: both the same)."""

    def __init__(self, base: Any, before: int, after: int, switch: int) -> None:
        self.base, self.arms, self.switch = base, (before, after), switch
        self.trace: list[dict] = []

    def reset(self, info: dict) -> None:
        self.base.reset(info)

    def act(self, observation: str, info: dict) -> Any:
        arm = self.arms[info["turn"] >= self.switch]
        self.trace.append({"probs": np.eye(13)[arm].tolist()})
        text = STRATEGY_SETS[13][arm][1]
        return self.base.act(f"Strategy: {text}\n{observation}" if text else observation, info)


def make_agent(method: str, base: Any, seed: int, embedder: Embedder, args) -> AlsoAgent | Schedule:
    if method.startswith("schedule:"):
        before, after = map(int, method.split(":")[1:])
        return Schedule(base, before, after, args.switch)
    selector, _, query = method.partition("@")
    options = {"eta": args.eta, "epochs": args.epochs, **dict(parse_qsl(query))}
    config = AlsoConfig.model_validate({"selector": selector, "seed": seed, **options})
    return AlsoAgent(base, config, embedder)


def episode(env, agent, task: Task, seed: int) -> Episode:
    obs, info = env.reset(seed=seed, options={"task": task})
    agent.reset({**info, "seed": seed})
    rewards, turns, done, reward = [], [], False, 0.0
    while not done:
        turns.append(info["turn"])
        action = agent.act(obs, info)  # a model's agent returns an Action (text + usage)
        text = action.text if isinstance(action, Action) else action
        obs, reward, terminated, truncated, info = env.step(text)
        done = terminated or truncated
        rewards.append(info["evaluation"]["normalized"])
    firm = [float(np.sum(np.array(step["probs"])[FIRM_ARMS])) for step in agent.trace]
    return Episode(rewards, turns, firm, reward, bool(info.get("agreement")))


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
    # One negotiator for every episode (a model loads once); its reset starts each episode.
    base = agent_factory(args.base)(env)
    results = {m: Result() for m in methods}
    for method in methods:
        res = results[method]
        start = time.perf_counter()
        for seed, seed_tasks in tasks.items():
            for i, task in enumerate(seed_tasks):
                ep_seed = seed * 1000 + i
                ep = episode(env, make_agent(method, base, ep_seed, embedder, args), task, ep_seed)
                tally(res, ep, args.switch)
        res.seconds = time.perf_counter() - start
    return results


def tally(res: Result, ep: Episode, switch: int) -> None:
    res.means.append(float(np.mean(ep.rewards)))
    res.finals.append(ep.final)
    res.agreements.append(ep.agreed)
    res.lengths.append(len(ep.rewards))
    if (rec := recovery(ep.rewards, ep.turns, switch)) is not None:
        res.recoveries.append(rec)
    after = [f for f, t in zip(ep.firm, ep.turns, strict=True) if t >= switch]
    res.firm_before += [f for f, t in zip(ep.firm, ep.turns, strict=True) if t < switch]
    for i, f in enumerate(after[:AFTER]):
        res.firm_after[i].append(f)


def partner_spec(args) -> str:
    return f"scripted:{args.partner}" + (
        f"?switch={args.switch}" if args.partner == "switcher" else ""
    )


def interval(values: np.ndarray) -> str:
    """Mean +- the half-width of a normal 95% interval over episodes."""
    half = 1.96 * values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else 0.0
    return f"{values.mean():.4f} ± {half:.4f}"


def table(results: dict[str, Result], labels: dict[str, str], order: list[str]) -> Table:
    base = np.array(results["schedule:0:0"].means)
    t = Table(title="ALSO vs arm 0, fixed arms and bandits (offline social setup)")
    columns = ["method", "mean r_t (95% CI)", "vs arm 0", "Δ vs arm 0 (95% CI)", "final",
               "deals", "turns", "firm p: before | after 1..5", "recovery", "ms/turn"]  # fmt: skip
    for col in columns:
        t.add_column(col, justify="left" if col == "method" else "right")
    for method in order:
        res, means = results[method], np.array(results[method].means)
        rec = f"{np.mean(res.recoveries):.2f} (n={len(res.recoveries)})" if res.recoveries else "-"
        firm = " ".join(f"{np.mean(f):.2f}" if f else "-" for f in res.firm_after)
        t.add_row(
            labels[method],
            interval(means),
            f"{means.mean() / base.mean():.3f}x",
            interval(means - base),
            f"{np.mean(res.finals):.3f}",
            f"{np.mean(res.agreements):.0%}",
            f"{np.mean(res.lengths):.1f}",
            f"{np.mean(res.firm_before):.2f} | {firm}",
            rec,
            f"{1000 * res.seconds / max(1, sum(res.lengths)):.1f}",
        )
    return t


def contested(task: Task) -> bool:
    """Whether the two sides' goals conflict: every item division; bargains whose buyer target is
    below the seller's (otherwise the first offer already satisfies both)."""
    deal = task.config["deal"]
    if deal["kind"] != "price":
        return True
    targets = dict(zip(deal["roles"], deal["targets"], strict=True))
    return targets["buyer"] < targets["seller"]


def draw_tasks(args) -> dict[int, list[Task]]:
    suite = TaskSuite.load("social/negotiation")
    pool = [t for t in suite if args.all_tasks or contested(t)]
    return {
        seed: [
            pool[i]
            for i in np.random.default_rng(seed).choice(len(pool), args.episodes, replace=False)
        ]
        for seed in range(args.seeds)
    }


def main(argv: list[str] | None = None) -> dict[str, Result]:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    tasks = draw_tasks(args)
    embedder = make_embedder(args.embedder)
    fixed = [f"schedule:{k}:{k}" for k in range(13)]
    schedules = (
        [f"schedule:{a}:{b}" for a, b in itertools.product(range(13), repeat=2)]
        if args.schedules == "all"
        else fixed
    )
    results = run(schedules, tasks, embedder, args)
    best = max(fixed, key=lambda s: np.mean(results[s].means))
    pool = {**BANDITS, **EXTRA}
    bandits = (
        {k: pool[k] for k in args.bandits}
        if args.bandits
        else {**BANDITS, **(EXTRA if args.extra else {})}
    )
    results |= run(list(bandits), tasks, embedder, args)
    labels = {
        "schedule:0:0": "arm 0 (persona only)",
        best: f"best fixed arm in hindsight (arm {best.split(':')[1]})",
        **bandits,
    }
    order = ["schedule:0:0", best]
    if args.schedules == "all":
        best_schedule = max(schedules, key=lambda s: np.mean(results[s].means))
        labels[best_schedule] = "best schedule in hindsight (arms {}→{}, reference)".format(
            *best_schedule.split(":")[1:]
        )
        order.append(best_schedule)
    order = list(dict.fromkeys([*order, *bandits]))
    console = Console(width=220)
    console.print(table(results, labels, order))
    report(console, results, schedules, args, embedder)
    return results


def report(console: Console, results: dict, schedules: list[str], args, embedder) -> None:
    """The setup line, per-seed means, every fixed arm and the spread of the schedules."""
    n_tasks = sum(len(v) for v in draw_tasks(args).values())
    console.print(
        f"negotiator {args.base}, partner {partner_spec(args)}, "
        f"{args.seeds} seeds x {args.episodes} episodes "
        f"({n_tasks}, {'all' if args.all_tasks else 'contested'} tasks), embedder "
        f"{type(embedder).__name__}, ALSO: eta {args.eta:g}, decay 0.9, {args.epochs} epochs, "
        f"arm text persona+strategy, level reward; firm arms {FIRM_ARMS}; per-seed mean r_t "
        "(ALSO | ALSO centred | arm 0): "
        + "; ".join(
            " | ".join(f"{v:.4f}" for v in trio)
            for trio in zip(
                *(per_seed(results[m], args.seeds) for m in ("expo", "expo@arm_centre=true",
                                                             "schedule:0:0") if m in results),
                strict=True
            )
        )
    )  # fmt: skip
    console.print(
        "fixed arms, mean r_t: "
        + ", ".join(f"{k}:{np.mean(results[f'schedule:{k}:{k}'].means):.4f}" for k in range(13))
    )
    bandit_s = [f"{m}:{r.seconds:.0f}" for m, r in results.items() if not m.startswith("schedule:")]
    schedule_s = sum(results[s].seconds for s in schedules)
    console.print(
        f"wall time, s: {', '.join(bandit_s)}; all {len(schedules)} schedules {schedule_s:.0f}"
    )
    if len(schedules) < 169:
        return
    means = np.array([np.mean(results[s].means) for s in schedules])
    console.print(
        f"all 169 schedules: mean {means.mean():.4f} (a uniformly random schedule), "
        f"best {means.max():.4f}, worst {means.min():.4f}"
    )


def per_seed(res: Result, seeds: int) -> list[float]:
    """Mean r_t per seed (episodes are run seed by seed)."""
    n = len(res.means) // seeds
    return [float(np.mean(res.means[i * n : (i + 1) * n])) for i in range(seeds)]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=20, help="episodes per seed")
    parser.add_argument("--switch", type=int, default=10, help="turn at which the partner switches")
    parser.add_argument(
        "--partner",
        default="switcher",
        choices=["switcher", "tit-for-tat", "conceder", "hardliner"],
    )
    parser.add_argument("--embedder", default="auto", choices=["hash", "minilm", "auto"])
    parser.add_argument("--eta", type=float, default=5.0, help="ALSO's eta (0.5..10)")
    parser.add_argument("--epochs", type=int, default=100, help="surrogate epochs (the paper: 100)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (shared machine: 1)")
    parser.add_argument("--all-tasks", action="store_true", help="keep uncontested bargains")
    parser.add_argument("--extra", action="store_true", help="add the rows of EXTRA")
    parser.add_argument(
        "--base", default=FOLLOWER, help="the negotiator ALSO steers: any agent spec (hf:smollm2)"
    )
    parser.add_argument(
        "--schedules", default="all", choices=["all", "fixed"],
        help="fixed: only the 13 fixed arms, not all 169 (arm before, arm after the switch) pairs",
    )  # fmt: skip
    parser.add_argument(
        "--bandits", nargs="+", default=None, choices=[*BANDITS, *EXTRA],
        help="only these bandit rows (default: every row of BANDITS, and EXTRA with --extra)",
    )  # fmt: skip
    return parser.parse_args(argv)


if __name__ == "__main__":
    main()
