"""The engine option (``local`` or ``vllm``) as every entry point reads it; no vLLM needed."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.llm.engine import check_engine, native_bf16, require_engine
from agentgym.llm.engine import precision as engines
from agentgym.llm.factory import make_client
from agentgym.train.config import TrainConfig, load_config

HAS_VLLM = importlib.util.find_spec("vllm") is not None


def test_an_unknown_engine_is_one_line_naming_the_allowed_ones():
    with pytest.raises(ValueError, match="unknown engine 'vlm'; use one of: local, vllm"):
        check_engine("vlm")
    with pytest.raises(ValueError, match="bad client options"):
        make_client("hf:smollm2?engine=vlm")
    result = CliRunner().invoke(app, ["serve", "smollm2", "--engine", "vlm"])
    assert result.exit_code == 2 and "unknown engine 'vlm'" in result.output


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed here")
def test_engine_vllm_without_the_extra_says_what_to_install():
    with pytest.raises(ValueError, match=r"pip install 'agentgym\[vllm\]'"):
        require_engine("vllm")
    with pytest.raises(ValueError, match="engine vllm needs vLLM"):
        make_client("hf:smollm2?engine=vllm")


def test_train_config_reads_rollout_engine_and_refuses_it_with_a_routed_policy():
    path = Path(__file__).parents[2] / "configs" / "clarify_grpo.yaml"
    cfg = load_config(path, ["rollout.engine=vllm", "rollout.kv_cache_gb=4"])
    assert (cfg.rollout.engine, cfg.rollout.kv_cache_gb) == ("vllm", 4.0)
    with pytest.raises(ValueError, match="rollout.engine"):
        load_config(path, ["rollout.engine=sglang"])
    with pytest.raises(ValueError, match="rollout.engine vllm does not do"):
        TrainConfig.model_validate(
            {
                "model": {"path": "m", "policy": "pa_moe"},
                "env": {"id": "Household-v0"},
                "algo": {"name": "gigpo"},
                "rollout": {"engine": "vllm"},
            }
        )


def test_the_hf_dtype_option_reaches_the_engine_and_a_bad_one_names_the_allowed(tiny_model):
    import torch

    client = make_client(f"hf:{tiny_model}?dtype=bfloat16")
    assert next(client.engine.model.parameters()).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="Input should be 'float32' or 'bfloat16'"):
        make_client(f"hf:{tiny_model}?dtype=half")
    result = CliRunner().invoke(app, ["serve", str(tiny_model), "--dtype", "half"])
    assert result.exit_code == 2 and "unknown dtype 'half'" in result.output


AVX2_EPYC = "processor\t: 0\nflags\t\t: fpu sse sse2 avx f16c avx2 sha_ni\n"
SAPPHIRE_RAPIDS = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
GRAVITON3 = "processor\t: 0\nFeatures\t: fp asimd sve bf16 i8mm\n"


def test_native_bf16_is_read_from_the_cpu_flags():
    assert native_bf16(AVX2_EPYC) is False
    assert native_bf16(SAPPHIRE_RAPIDS) is True
    assert native_bf16(GRAVITON3) is True
    assert native_bf16("model name\t: avx512_bf16 lookalike in a name\n") is False


def test_bfloat16_on_a_cpu_that_emulates_it_warns_and_names_float32(monkeypatch):
    monkeypatch.setattr(engines, "native_bf16", lambda: False)
    with pytest.warns(RuntimeWarning, match="emulated .* use float32 here"):
        engines.warn_if_emulated_bf16("bfloat16", "cpu")
    with pytest.warns(RuntimeWarning, match="bf16 on this CPU is emulated"):
        engines.warn_if_emulated_bf16("bf16", "cpu")  # the trainer's precision
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engines.warn_if_emulated_bf16("float32", "cpu")
        engines.warn_if_emulated_bf16("bfloat16", "cuda:0")
        monkeypatch.setattr(engines, "native_bf16", lambda: True)
        engines.warn_if_emulated_bf16("bfloat16", "cpu")
