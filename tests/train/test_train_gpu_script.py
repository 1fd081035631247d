"""benchmarks/gpu.sh starts and writes its tables: both demos with smoke settings on a small
SmolLM2-shaped model (random weights, SmolLM2's tokenizer), on the CPU."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import torch

from agentgym.llm.models import is_fetched, model_dir

ROOT = Path(__file__).parents[2]


@pytest.mark.slow
@pytest.mark.timeout(900)  # gpu.sh's smoke budgets: 300 s a part, minutes on a loaded CPU
@pytest.mark.skipif(not is_fetched("smollm2"), reason="hf:smollm2 not fetched")
def test_gpu_script_runs_both_demos_and_writes_tables(tmp_path):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    config = AutoConfig.from_pretrained(model_dir("smollm2"))
    config.update(
        {"hidden_size": 48, "intermediate_size": 96, "num_hidden_layers": 2,
         "num_attention_heads": 6, "num_key_value_heads": 2, "head_dim": 8}
    )  # fmt: skip
    torch.manual_seed(0)
    model = tmp_path / "model"
    AutoModelForCausalLM.from_config(config).save_pretrained(model)
    AutoTokenizer.from_pretrained(model_dir("smollm2")).save_pretrained(model)
    out = tmp_path / "out"
    env = {**os.environ, "TINY": "1", "MODEL": str(model), "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        ["bash", "benchmarks/gpu.sh", str(out)], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + (out / "kbqa.log").read_text()[-2000:]
    for part in ("kbqa", "household"):
        tables = (out / part / "tables.md").read_text()
        assert "| untrained |" in tables and "| after RL |" in tables
        assert "after RL - after SFT" in tables and "Wall time" in tables
        assert (out / part / "results.json").is_file()
    assert "== household" in done.stdout
