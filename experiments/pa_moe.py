"""PA-MoE vs a single LoRA policy and an observation-only router on Household.

An imbalanced Household mix in small rooms (at most ``--max-receptacles`` receptacles): simple
``put`` tasks and, ``--complex-share`` of them (25%), two-phase ``clean`` tasks (find and take,
then clean at the sink basin and deliver: after the same ``You pick up the X ...`` answer a put
task goes to the destination, a clean task to the sink). Train and held-out tasks come from
disjoint floorplans (every fourth floorplan held out, as ``kit.household_tasks``).

Per seed: one tiny Llama (``kit.demo_model``, tokenizer fitted to the searcher's texts),
SFT on the observation-grounded searcher's training episodes
(:class:`~agentgym.envs.household.searcher.PhasedSearchAgent`), shared by the arms; then the
same number of GRPO steps with the same rollout seeds for (a) one LoRA adapter, (b) PA-MoE with
K LoRA experts of the same rank and the goal-aware router, (c) PA-MoE with the observation-only
router (``goal_aware: false``). Held-out success per task type (the same evaluation episodes,
job seeds shared, sampled at ``--eval-temperature``; PA-MoE routes greedily) pooled over seeds
with 95% Wilson intervals; switches per episode; where the switch falls relative to the true
phase boundary (the first turn after the take answered ``You pick up ...``).

    python -m experiments.pa_moe --seeds 0 1 2

The method: docs/methods.md; the figures: docs/results.md.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

from agentgym.episode import Episode
from agentgym.metrics import wilson_interval
from agentgym.registry import make
from agentgym.rollout import rollout
from agentgym.task import Task, TaskSuite, write_tasks
from experiments import kit
from experiments.results import command_line, markdown_table, run_experiment, section_text

MARKER = "## PA-MoE vs a single policy and an observation-only router (Household)"


def marker(args: argparse.Namespace) -> str:
    """The section's heading: the tiny model's, or its own per pretrained ``--model``."""
    return f"{MARKER[:-1]}, {args.model})" if args.model else MARKER


ARMS = ("single", "pa_moe", "obs_only")
LABELS = {
    "sft": "after SFT (no RL)",
    "single": "single LoRA + GRPO",
    "pa_moe": "PA-MoE (goal-aware router) + GRPO",
    "obs_only": "PA-MoE, observation-only router + GRPO",
}
KINDS = ("clean", "put")
PICKUP = "You pick up the "
REAL_SCALE = (
    "`agentgym train configs/methods/pa_moe_household.yaml` (model.path a Hugging Face chat "
    "model after SFT, e.g. Qwen2.5-1.5B-Instruct, model.device cuda, rollout.tasks_per_step 16, "
    "rollout.max_turns 50, steps 200), then `pa_moe_household_obs_only.yaml` (observation-only "
    "router) and `pa_moe_household_single.yaml` (one LoRA adapter) with the same overrides; "
    "evaluate PA-MoE checkpoints with `agentgym eval -a pa_moe:OUT/final`"
)


# ============================================================================ tasks and data
def small_room_tasks(max_receptacles: int, max_turns: int) -> dict[str, list[Task]]:
    """``put`` and ``clean`` tasks of ``household/train`` in small rooms, by kind."""
    env = make("Household-v0")
    out: dict[str, list[Task]] = {k: [] for k in KINDS}
    for t in TaskSuite.load("household/train"):
        if t.tags[0] in KINDS:
            overview = env.reset(options={"task": t})[0].split("\n")[0]
            if overview.count(", ") + 1 <= max_receptacles:
                config = {**t.config, "max_turns": max_turns}
                out[t.tags[0]].append(t.model_copy(update={"config": config}))
    return out


def mix(tasks: dict[str, list[Task]], share: float, rng: random.Random) -> list[Task]:
    """All put tasks plus clean tasks drawn so they make ``share`` of the mix."""
    want = round(share * len(tasks["put"]) / (1 - share))
    clean = rng.sample(tasks["clean"], min(want, len(tasks["clean"])))
    return sorted([*tasks["put"], *clean], key=lambda t: t.id)


def suites(root: Path, args: argparse.Namespace) -> dict[str, Path]:
    """Train (the imbalanced mix) and held-out (every held-out clean task, as many put tasks)
    suites, split by floorplan; also ``put``: the training put tasks (tokenizer corpus)."""
    by_kind = small_room_tasks(args.max_receptacles, args.max_turns)
    plans = sorted({t.config["floorplan"] for ts in by_kind.values() for t in ts})
    held = set(plans[3::4])
    split = {
        s: {k: [t for t in ts if (t.config["floorplan"] in held) == (s == "test")]
            for k, ts in by_kind.items()}
        for s in ("train", "test")
    }  # fmt: skip
    rng = random.Random("pa-moe")
    test_clean = split["test"]["clean"][: args.eval_tasks]
    test_put = rng.sample(split["test"]["put"], min(len(test_clean), len(split["test"]["put"])))
    chosen = {
        "train": mix(split["train"], args.complex_share, rng),
        "test": sorted([*test_clean, *test_put], key=lambda t: t.id),
        "put": split["train"]["put"],
    }
    paths = {}
    for name, tasks in chosen.items():
        paths[name] = root / f"{name}.jsonl"
        write_tasks(paths[name], tasks)
    return paths


def searcher_episodes(tasks: list[Task]) -> list[Episode]:
    """The phased searcher (put and clean) on ``tasks``; every one must be solved."""
    from agentgym.envs.household.searcher import PhasedSearchAgent

    env = make("Household-v0")
    episodes = [rollout(env, PhasedSearchAgent(), t, seed=0) for t in tasks]
    failed = [t.id for t, ep in zip(tasks, episodes, strict=True) if not ep.success]
    if failed:
        raise RuntimeError(f"the phased searcher failed training tasks {failed[:5]}")
    return episodes


def sft_data(root: Path, paths: dict[str, Path]) -> tuple[Path, list[str]]:
    """The searcher's training episodes as JSONL (``sft.data``) and every text in them."""
    episodes = searcher_episodes(list(TaskSuite.load(paths["train"])))
    path = root / "searcher.jsonl"
    path.write_text("".join(e.model_dump_json() + "\n" for e in episodes), encoding="utf-8")
    return path, [text for ep in episodes for text in episode_texts(ep)]


def episode_texts(ep: Episode) -> list[str]:
    """The tokenizer's corpus from one episode (as the demo's: every observation and action;
    held-out episodes included, as the demo fits its tokenizer on both splits)."""
    return [ep.first_observation, *(t for s in ep.steps for t in (s.action, s.observation))]


# ============================================================================ training
RL = {"algo.name": "grpo", "algo.clip_high": 0.28}
"""The arms' algorithm: GRPO with DAPO's clip-higher (the SFT stage reads neither setting, and
a config rejects a setting its algorithm does not read)."""


def config(model: Path, paths: dict[str, Path], out: Path, args: Any, **over: Any) -> Any:
    """The demo's trainer config (``kit.trainer_config``) at the RL learning rate (``over``:
    dotted overrides; the SFT stage sets ``algo.name: sft`` and its rate, the arms :data:`RL`)."""
    return kit.trainer_config(
        model,
        paths,
        out,
        "Household-v0",
        args,
        **{
            "sft.context_weight": args.context_weight,
            "optim.lr": args.rl_lr,
            "eval_temperature": args.eval_temperature,
            **over,
        },
    )


def arm_overrides(args: argparse.Namespace, arm: str) -> dict[str, Any]:
    """The single LoRA adapter, or K PA-MoE experts of the same rank on the same modules and
    layers (goal-aware or not). With ``--model`` (:func:`kit.cpu_overrides`) that is
    every projection of the top layers, as the real-model train demo adapts."""
    real = kit.cpu_overrides(args) if args.model else {}
    lora = real.pop("model.lora", {"r": args.lora_r, "alpha": 2 * args.lora_r})
    if arm == "single":
        return {**real, "model.lora": {**lora, "dropout": 0.0}}
    options = {
        "num_experts": args.experts,
        "lora_r": args.lora_r,
        "lora_dropout": 0.0,
        "switch_penalty": args.switch_penalty,
        "goal_aware": arm == "pa_moe",
        **({"target_modules": lora["target_modules"], "layers": lora["layers"]} if real else {}),
    }
    return {**real, "model.policy": "pa_moe", "model.policy_options": options}


def boundary(ep: Episode) -> int | None:
    """The first turn of phase 2: the one after the take (its answer ``You pick up ...``)."""
    for i, step in enumerate(ep.steps):
        if step.observation.startswith(PICKUP):
            return i + 1
    return None


def evaluate(trainer: Any, tasks: list[Task]) -> list[dict[str, Any]]:
    """One record per held-out episode: kind, success, switch turns, phase boundary."""
    episodes = trainer.eval_episodes(tasks)
    kinds = {t.id: t.tags[0] for t in tasks}
    return [
        {
            "kind": kinds[ep.episode.task_id],
            "success": bool(ep.episode.success),
            "ok": ep.ok,
            "switches": [
                i
                for i, t in enumerate(ep.turns)
                if t.adapter_record is not None and t.adapter_record.switched
            ],
            "boundary": boundary(ep.episode),
            "turns": len(ep.turns),
        }
        for ep in episodes
    ]


def run_seed(seed: int, args: argparse.Namespace, root: Path, paths: dict[str, Path]) -> dict:
    """SFT once, then every arm's GRPO from that checkpoint; held-out records of each stage."""
    import agentgym.agents.pa_moe.train  # noqa: F401  (registers model.policy: pa_moe)
    from agentgym.train.trainer import Trainer

    tasks = list(TaskSuite.load(paths["test"]))
    if args.model:  # LoRA SFT on the pretrained model, merged so every arm starts from it
        model, real = args.model, kit.cpu_overrides(args)
    else:
        model = kit.demo_model(
            root / f"model-{seed}", {"put": paths["put"]}, args.hidden, args.layers, seed,
            "Household-v0", extra_texts=args.texts,
        )  # fmt: skip
        real = {}
    started = time.perf_counter()
    sft = Trainer(
        config(model, paths, root / f"sft-{seed}", args, seed=seed, steps=args.sft_steps,
               **{"algo.name": "sft", "sft.data": str(args.data), "optim.lr": args.sft_lr,
                  **real})
    )  # fmt: skip
    sft.run()
    out: dict[str, Any] = {"seed": seed, "sft": evaluate(sft, tasks), "time": {}}
    start = root / f"sft-{seed}" / ("merged" if args.model else "final")
    if args.model:
        sft.merged(start)
    sft.close()
    out["time"]["sft"] = time.perf_counter() - started
    print(f"seed {seed} sft: {summary_line(out['sft'])} ({out['time']['sft']:.0f}s)", flush=True)
    for arm in ARMS:
        started = time.perf_counter()
        rl = Trainer(
            config(start, paths, root / f"{arm}-{seed}", args,
                   seed=seed, steps=args.rl_steps, **RL, **arm_overrides(args, arm))
        )  # fmt: skip
        rl.run()
        out[arm] = evaluate(rl, tasks)
        out[f"{arm}_train"] = [h.get("success", h.get("reward", 0.0)) for h in rl.history]
        rl.close()
        out["time"][arm] = time.perf_counter() - started
        print(f"seed {seed} {arm}: {summary_line(out[arm])} ({out['time'][arm]:.0f}s)", flush=True)
    return out


# ============================================================================ report
def _records(results: list[dict], arm: str, kind: str) -> list[dict[str, Any]]:
    return [r for res in results for r in res[arm] if r["kind"] == kind and r["ok"]]


def _rate(records: list[dict[str, Any]]) -> str:
    wins, n = sum(r["success"] for r in records), len(records)
    lo, hi = wilson_interval(wins, n)
    return f"{wins}/{n} = {wins / n:.1%} [{lo:.1%}, {hi:.1%}]" if n else "-"


def _switches(records: list[dict[str, Any]]) -> str:
    return f"{sum(len(r['switches']) for r in records) / len(records):.2f}" if records else "-"


def _at_boundary(records: list[dict[str, Any]]) -> str:
    """Share of switches within one turn of the phase boundary (episodes that took)."""
    hits = total = 0
    for r in records:
        total += len(r["switches"])
        if r["boundary"] is not None:
            hits += sum(abs(s - r["boundary"]) <= 1 for s in r["switches"])
    return f"{hits}/{total} = {hits / total:.0%}" if total else "no switches"


def summary_line(records: list[dict[str, Any]]) -> str:
    clean = [r for r in records if r["kind"] == "clean" and r["ok"]]
    put = [r for r in records if r["kind"] == "put" and r["ok"]]
    return f"clean {_rate(clean)}, put {_rate(put)}, switches/ep {_switches(records)}"


COLUMNS = [
    "arm",
    "clean (two-phase) success",
    "put (simple) success",
    "switches/ep clean",
    "switches/ep put",
    "clean: switches within 1 turn of the boundary",
    "put: switches within 1 turn of the take",
]


def rows(results: list[dict]) -> list[list[str]]:
    out = []
    for arm in ("sft", *ARMS):
        clean, put = _records(results, arm, "clean"), _records(results, arm, "put")
        routed = arm not in ("sft", "single")
        out.append(
            [
                LABELS[arm],
                _rate(clean),
                _rate(put),
                _switches(clean) if routed else "-",
                _switches(put) if routed else "-",
                _at_boundary(clean) if routed else "-",
                _at_boundary(put) if routed else "-",
            ]
        )
    return out


def per_seed_rows(results: list[dict]) -> list[list[str]]:
    return [
        [LABELS[arm], *(_rate([r for r in res[arm] if r["kind"] == "clean"]) for res in results)]
        for arm in ("sft", *ARMS)
    ]


def settings(args: argparse.Namespace, n: dict[str, int]) -> str:
    return (
        f"Household small rooms (<= {args.max_receptacles} receptacles, {args.max_turns} turns), "
        f"training mix {n['train_put']} put + {n['train_clean']} clean tasks "
        f"({args.complex_share:.0%} two-phase), held out by floorplan {n['test_clean']} clean + "
        f"{n['test_put']} put tasks x {args.eval_samples} samples at T={args.eval_temperature}; "
        f"{model_words(args)}, {args.sft_steps} SFT "
        f"steps (lr {args.sft_lr}, observation LM weight {context_weight(args)}) on the phased "
        f"searcher's training episodes, then "
        f"{args.rl_steps} GRPO steps ({args.tasks_per_step} tasks x group {args.group_size}, "
        f"lr {args.rl_lr}, clip 0.2/0.28) per arm from that checkpoint with the same rollout "
        f"seeds; LoRA rank {args.lora_r} (alpha 2r, no dropout){adapted(args)} for the single "
        f"adapter and each of K={args.experts} experts; router: switch penalty "
        f"{args.switch_penalty}, Gumbel temperature 1 -> 0.1 (x0.99 per step), load balance "
        "0.01, greedy routing at evaluation"
    )


def model_words(args: argparse.Namespace) -> str:
    if not args.model:
        return f"tiny Llama (hidden {args.hidden}, {args.layers} layers) per seed"
    return (
        f"{args.model} (LoRA SFT on its top {args.lora_layers} layers, merged before RL; "
        f"{args.sft_batch} rows per SFT step, contexts of at most {args.max_context} tokens)"
    )


def context_weight(args: argparse.Namespace) -> float:
    return kit.cpu_overrides(args)["sft.context_weight"] if args.model else args.context_weight


def adapted(args: argparse.Namespace) -> str:
    return f" on every projection of the top {args.lora_layers} layers" if args.model else ""


def training_success(results: list[dict]) -> str:
    """Each arm's success on its GRPO training rollouts, all steps and seeds pooled."""
    parts = []
    for arm in ARMS:
        steps = [x for res in results for x in res.get(f"{arm}_train", [])]
        parts.append(f"{LABELS[arm]} {sum(steps) / len(steps):.1%}" if steps else LABELS[arm])
    return "Success on the GRPO training rollouts (mean over steps and seeds): " + "; ".join(parts)


def routed_stats(results: list[dict]) -> dict[str, float] | None:
    """What the routed arms' held-out episodes did: switches, episodes, pick-ups, mean turns."""
    recs = [r for res in results for arm in ("pa_moe", "obs_only") for r in res[arm] if r["ok"]]
    if not recs:
        return None
    return {
        "switches": sum(len(r["switches"]) for r in recs),
        "episodes": len(recs),
        "took": sum(r["boundary"] is not None for r in recs),
        "turns": sum(r["turns"] for r in recs) / len(recs),
    }


def behaviour(results: list[dict]) -> str:
    """:func:`routed_stats` in words."""
    st = routed_stats(results)
    if st is None:
        return ""
    return (
        f"Both routers' held-out episodes: {st['switches']} switches in {st['episodes']} episodes "
        f"(greedy routing kept the first expert throughout), {st['took']} picked anything up, "
        f"{st['turns']:.1f} turns on average."
    )


def clean_wins(results: list[dict]) -> dict[str, int]:
    """Held-out clean-task successes per arm (``sft``: after SFT alone)."""
    return {
        arm: sum(r["success"] for r in _records(results, arm, "clean")) for arm in ("sft", *ARMS)
    }


def nothing_learned(results: list[dict]) -> bool:
    """No held-out episode of any arm succeeded, clean or put, after SFT or after GRPO."""
    put = sum(r["success"] for arm in ("sft", *ARMS) for r in _records(results, arm, "put"))
    return not put and not any(clean_wins(results).values())


def finding(results: list[dict]) -> str:
    wins, n = clean_wins(results), len(_records(results, "pa_moe", "clean"))
    if nothing_learned(results):
        return (
            "Nothing learns at this scale: no held-out episode of any arm succeeds, after SFT "
            "or after GRPO, so the comparison PA-MoE is built for is not measured here. With no "
            "success in a group GRPO's advantages are zero; the experts then get no policy "
            "gradient and the routers learn only from the switching penalty and the load-balance "
            "loss, so their switches are not evidence of phase detection. " + behaviour(results)
        )
    beats = wins["pa_moe"] > max(wins["single"], wins["obs_only"])
    return (
        f"On the held-out clean tasks PA-MoE won {wins['pa_moe']}/{n}, the single LoRA policy "
        f"{wins['single']}/{n}, the observation-only router {wins['obs_only']}/{n} (after SFT "
        f"alone: {wins['sft']}/{n}): "
        + ("PA-MoE is ahead" if beats else "PA-MoE is not ahead")
        + " at this scale; overlapping intervals mean no arm is shown better."
    )


def section(args: argparse.Namespace, results: list[dict]) -> str:
    """The docs/results.md section."""
    seeds = ", ".join(str(r["seed"]) for r in results)
    minutes = sum(sum(r["time"].values()) for r in results) / 60
    return section_text(
        marker(args),
        command_line("pa_moe", args.argv)
        + f" (seeds {seeds}; {minutes:.0f} min of run time summed over seeds on the shared "
        "2-core CPU; seeds are independent and may run as parallel one-seed processes, "
        "reported together with `--from-json`).",
        f"Setting: {settings(args, args.counts)}.",
        "Held-out success pooled over seeds (wins/episodes, 95% Wilson interval); switches "
        "per episode and the share of switches within one turn of the true phase boundary "
        "(the turn after the take), greedy routing:",
        markdown_table(COLUMNS, rows(results)),
        "Clean-task success per seed:",
        markdown_table(["arm", *(f"seed {r['seed']}" for r in results)], per_seed_rows(results)),
        training_success(results) + ".",
        finding(results),
        f"Real scale: {REAL_SCALE}.",
    )


def run(args: argparse.Namespace) -> list[dict]:
    import tempfile

    import torch

    torch.set_num_threads(args.threads)
    results: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = suites(root, args)
        args.counts = counts(paths)
        print(f"tasks: {args.counts}", flush=True)
        if args.from_json:  # report a finished run again (same flags) without training
            return [r for f in args.from_json for r in json.loads(Path(f).read_text("utf-8"))]
        args.data, texts = sft_data(root, paths)
        if not args.model:  # the tiny model's tokenizer is fitted to both splits' texts
            held_out = searcher_episodes(list(TaskSuite.load(paths["test"])))
            args.texts = [*texts, *(text for ep in held_out for text in episode_texts(ep))]
        for seed in args.seeds:
            results.append(run_seed(seed, args, root, paths))
            if args.json:  # after every seed: a run cut short keeps what it measured
                Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    vars(args).pop("texts", None)
    return results


def counts(paths: dict[str, Path]) -> dict[str, int]:
    """Tasks per split and kind (``train_clean``, ``test_put``, ...)."""
    return {
        f"{split}_{k}": sum(t.tags[0] == k for t in TaskSuite.load(paths[split]))
        for split in ("train", "test")
        for k in KINDS
    }


def parser() -> argparse.ArgumentParser:
    """The experiment's flags."""
    p = argparse.ArgumentParser(description="PA-MoE vs single LoRA vs observation-only router")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--max-receptacles", type=int, default=10)
    p.add_argument("--max-turns", type=int, default=16)
    p.add_argument("--complex-share", type=float, default=0.25)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    kit.add_pretrained_flags(p, max_context=1024, lora_r=None)  # its --lora-r sizes both models
    p.add_argument("--sft-steps", type=int, default=300)
    p.add_argument("--sft-lr", type=float, default=5e-3)
    p.add_argument(
        "--context-weight",
        type=float,
        default=0.0,
        help="SFT's LM loss on observations (the demo's is 1.0; here the model then wrote "
        "observation text as its actions, see docs/results.md)",
    )
    p.add_argument("--rl-steps", type=int, default=8)
    p.add_argument("--rl-lr", type=float, default=1e-3)
    p.add_argument("--tasks-per-step", type=int, default=4)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--experts", type=int, default=2, help="K (the paper: 4)")
    p.add_argument("--lora-r", type=int, default=8, help="the paper: 32")
    p.add_argument("--switch-penalty", type=float, default=0.1)
    p.add_argument(
        "--eval-tasks", type=int, default=16, help="held-out clean tasks (16: all; as many put)"
    )
    p.add_argument("--eval-samples", type=int, default=1)
    p.add_argument("--eval-temperature", type=float, default=0.0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--results", default="docs/results.md")
    p.add_argument("--json", default=None, help="also write every held-out episode's record here")
    p.add_argument(
        "--from-json",
        nargs="+",
        default=None,
        help="report the records of finished runs (same flags; one-seed files are pooled)",
    )
    return p


def main(argv: list[str] | None = None) -> list[dict]:
    return run_experiment(parser(), run, marker, section, argv)


if __name__ == "__main__":
    main()
