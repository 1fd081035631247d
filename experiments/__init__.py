"""Research experiments on the trainer and the envs, one module each, run from the repository root:

    python -m experiments.train_demo [--quick]        # SFT then GRPO with a tiny model (or SmolLM2)
    python -m experiments.early_experience            # IWM / SR vs imitation
    python -m experiments.infopo                      # InfoPO vs GRPO
    python -m experiments.kbqa_r1                     # RRS -> SFT -> GRPO on MetaQA
    python -m experiments.pa_moe                      # PA-MoE vs one LoRA policy
    python -m experiments.also                        # ALSO vs fixed arms and bandits
    python -m experiments.oversight                   # oversight games
    python -m experiments.baselines                   # SmolLM2 zero-shot beside random and expert

Each writes its tables to the console and, where it has a section there, into docs/results.md
(the only place measured figures are kept). Speed measurements stay in ``benchmarks/``.

The modules with no command of their own are what the experiments share: :mod:`experiments.kit`
and :mod:`experiments.results` for all of them, ``final_eval``, ``run_snapshot`` and the oversight
game's ``oversight_learn``/``oversight_toollearn``/``oversight_analysis`` for some. An experiment
imports another experiment only where it is a variant of it, as :data:`BUILDS_ON` lists (and
``tests/train/test_experiments_kit.py`` checks, with no import cycle).
"""

BUILDS_ON: dict[str, set[str]] = {
    "also_moves": {"also"},  # ALSO's tasks, partner and schedules, under fixed arms
    "also_sft": {"also"},  # the same tasks, partner and strategy follower
    "household_verb_probe": {"household_full"},  # continues its recipe's kept adapters
    "train_real": {"kbqa_r1"},  # KBQA-R1's training tags
    "train_demo": {"train_real"},  # `--model smollm2` hands the demo over to train_real
}
"""Experiment -> the other experiments (modules with a command) it imports."""
