"""Hostile files and values for ``agentgym train`` and ``hf:`` checkpoints: a crafted trainer
state runs nothing, a YAML alias bomb is refused before it expands, every numeric config field
has bounds, and pickled model weights are refused by name. Each is one ``error:`` line."""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import torch
from pydantic import BaseModel, ValidationError
from safetensors.torch import load_file, save_file
from support import one_line_error
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.task import write_tasks
from agentgym.testing.noop import noop_suite, register_test_envs
from agentgym.train import checkpoint, config_yaml, state_file
from agentgym.train.config import TrainConfig, load_config
from agentgym.train.config_errors import one_line
from agentgym.train.state_file import StateRefused

runner = CliRunner()
register_test_envs()


class _RunsACommand:
    """What a crafted pickle holds: unpickling it calls ``os.system``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


SMALL = ["env.system_prompt=false", "rollout.tasks_per_step=1", "rollout.group_size=2"]
SMALL += ["rollout.max_turns=2", "rollout.max_tokens=4", "steps=3"]


def _train(tiny_model, out: Path, *extra: str):
    """``agentgym train`` of the tiny model on two NoOp tasks into ``out``."""
    suite = out.parent / "noop.jsonl"
    if not suite.is_file():
        write_tasks(suite, noop_suite(2, length=2).tasks)
    args = ["train", "-c", f"model.path={tiny_model}", "-c", "env.id=NoOp-v0"]
    for item in [f"env.suite={suite}", f"out_dir={out}", *SMALL, *extra]:
        args += ["-c", item]
    return runner.invoke(app, args)


# ---------------------------------------------------------------- the trainer state (item 1)
def test_a_pickled_trainer_state_runs_nothing_and_is_refused_by_name(tiny_model, tmp_path):
    """The probe: a resumable checkpoint whose ``trainer_state.pt`` calls ``os.system`` when
    unpickled. Resuming (the default) refuses it in one line and the command never runs."""
    step = tmp_path / "out" / "step-000002"
    shutil.copytree(tiny_model, step)  # weights and tokenizer: a checkpoint that loads
    marker = tmp_path / "pwned"
    (step / "trainer_state.pt").write_bytes(pickle.dumps({"optimizer": _RunsACommand(marker)}))
    result = _train(tiny_model, tmp_path / "out")
    one_line_error(result, str(step / "trainer_state.pt"), "never loaded")
    assert not marker.exists()
    with pytest.raises(StateRefused, match="trainer_state.pt"):  # the library refuses it too
        checkpoint.load_state(step, torch.optim.AdamW([torch.nn.Parameter(torch.ones(1))]), {})
    assert not marker.exists()


def _optimised(steps: int = 3) -> tuple[torch.nn.Module, torch.optim.Optimizer, torch.nn.Module]:
    torch.manual_seed(steps)
    model, head = torch.nn.Linear(4, 3), torch.nn.Linear(3, 1)
    optimizer = torch.optim.AdamW([*model.parameters(), *head.parameters()], lr=1e-2)
    for _ in range(steps):
        head(model(torch.randn(5, 4))).pow(2).mean().backward()
        optimizer.step()
    return model, optimizer, head


def _draws() -> tuple[float, float, torch.Tensor]:
    return random.random(), float(np.random.random()), torch.rand(3)


def test_the_state_round_trip_is_exact(tmp_path):
    """Optimizer moments and groups, extra modules, the three RNGs and the step come back bit for
    bit from safetensors + JSON."""
    _, optimizer, head = _optimised()
    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    np.random.normal()  # a cached Gaussian in NumPy's state
    state_file.write(tmp_path, optimizer, {"value_head": head}, 7, {"seed": 0})
    expected = _draws()
    assert json.loads((tmp_path / state_file.STATE).read_text())["config"] == {"seed": 0}

    _, fresh, fresh_head = _optimised(steps=0)  # other weights, no optimizer state yet
    random.seed(9)
    np.random.seed(9)
    torch.manual_seed(9)
    assert state_file.restore(tmp_path, fresh, {"value_head": fresh_head}) == 7
    got = _draws()
    assert got[:2] == expected[:2] and torch.equal(got[2], expected[2])
    a, b = optimizer.state_dict(), fresh.state_dict()
    assert a["param_groups"] == b["param_groups"]  # betas a tuple again
    for pid in a["state"]:
        for key, value in a["state"][pid].items():
            assert torch.equal(value, b["state"][pid][key]), (pid, key)
    assert all(
        torch.equal(x, y) for x, y in zip(head.parameters(), fresh_head.parameters(), strict=True)
    )
    assert b["state"] and b["state"][0]["step"].item() == 3


def _saved(tmp_path: Path) -> Path:
    _, optimizer, head = _optimised()
    state_file.write(tmp_path, optimizer, {"value_head": head}, 3, {})
    return tmp_path


def _truncate_json(d: Path) -> Path:
    text = (d / state_file.STATE).read_text()
    (d / state_file.STATE).write_text(text[: len(text) // 2])
    return d / state_file.STATE


def _json_field(d: Path) -> Path:
    meta = json.loads((d / state_file.STATE).read_text())
    meta["python_rng"]["internal"] = meta["python_rng"]["internal"][:5]
    (d / state_file.STATE).write_text(json.dumps(meta))
    return d / state_file.STATE


def _noise(d: Path) -> Path:
    (d / state_file.TENSORS).write_bytes(random.Random(0).randbytes(4096))
    return d / state_file.TENSORS


def _huge_header(d: Path) -> Path:  # a header length of 2**62 bytes
    (d / state_file.TENSORS).write_bytes((2**62).to_bytes(8, "little") + b"{}")
    return d / state_file.TENSORS


def _no_tensors(d: Path) -> Path:
    (d / state_file.TENSORS).unlink()
    return d / state_file.TENSORS


def _wrong_shapes(d: Path) -> Path:
    tensors = load_file(d / state_file.TENSORS)
    tensors["extra/value_head/weight"] = torch.zeros(7, 7)
    save_file(tensors, d / state_file.TENSORS)
    return d / state_file.TENSORS


@pytest.mark.parametrize(
    "corrupt", [_truncate_json, _json_field, _noise, _huge_header, _no_tensors, _wrong_shapes]
)
def test_a_corrupt_trainer_state_is_refused_in_one_line_naming_the_file(tmp_path, corrupt):
    bad = corrupt(_saved(tmp_path))
    _, optimizer, head = _optimised()
    with pytest.raises(StateRefused) as refused:
        state_file.restore(tmp_path, optimizer, {"value_head": head})
    message = str(refused.value)
    assert message.startswith(str(bad)) and "\n" not in message and len(message) < 400


def test_resuming_from_a_corrupt_state_is_one_error_line(tiny_model, tmp_path):
    out = tmp_path / "out"
    assert _train(tiny_model, out, "steps=1", "save_every=1").exit_code == 0
    step = checkpoint.latest(out)
    assert step is not None and (step / state_file.TENSORS).is_file()
    assert not (step / state_file.PICKLED).exists()
    _noise(step)
    one_line_error(_train(tiny_model, out), str(step / state_file.TENSORS))


def test_a_pickled_pa_moe_router_is_refused_unread(tmp_path):
    from agentgym.agents.pa_moe import load_router

    marker = tmp_path / "pwned"
    (tmp_path / "router.pt").write_bytes(pickle.dumps(_RunsACommand(marker)))
    with pytest.raises(ValueError, match="router.pt: a pickled router is never loaded"):
        load_router(tmp_path)
    assert not marker.exists()


# ------------------------------------------------------------------- YAML alias bomb (item 2)
def _alias_bomb(model_path: str = "tiny") -> str:
    """Nine levels of nine aliases under ``model.policy_options``: 9**9 values once expanded."""
    levels = "abcdefghi"
    lines = ["model:", f"  path: {model_path}", "  policy_options:"]
    lines.append('    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]')
    for prev, cur in zip(levels, levels[1:], strict=False):
        lines.append(f"    {cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join([*lines, "env:", "  id: NoOp-v0", ""])


def test_the_alias_bomb_is_refused_before_it_expands(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(_alias_bomb())
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as refused:
            load_config(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(refused.value)
    assert message.startswith(f"{path}: too large a config") and "aliases" in message
    assert "\n" not in message and len(message) < 300
    assert peak < 20 * 2**20  # the expansion is measured, never built


def test_the_alias_bomb_is_one_error_line_from_the_cli(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(_alias_bomb())
    one_line_error(runner.invoke(app, ["train", str(path)]), str(path), "too large a config")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("a: &a [*a]", "the alias \\*a sits inside the value it names"),
        ("model: &m {path: x, more: *m}", "the alias \\*m sits inside"),
        ("x: " + "[" * 200 + "]" * 200, "nested deeper than 100 levels"),
        ("x: &s " + "y" * 200_000 + "\n" + "z: [" + ",".join(["*s"] * 100) + "]", "characters"),
    ],
    ids=["loop", "loop-in-a-mapping", "depth", "long-text-repeated"],
)
def test_loops_depth_and_long_expansions_are_refused(tmp_path, text, words):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=words):
        load_config(path)


def test_an_alias_bomb_in_an_override_is_refused():
    bomb = "[" + ",".join(["&a [1,1,1,1,1,1,1,1,1,1]"] + ["*a"] * 9) + "]"
    for _ in range(6):  # nest it: 10**6 values from a short string
        bomb = "[" + ",".join([f"&b{_} {bomb}"] + [f"*b{_}"] * 9) + "]"
    with pytest.raises(ValueError, match="too large|values once"):
        load_config(None, ["model.path=x", "env.id=NoOp-v0", f"model.policy_options={{k: {bomb}}}"])


def test_configs_of_the_repository_load_with_the_bounded_loader():
    for path in sorted((Path(__file__).parents[2] / "configs").rglob("*.yaml")):
        assert isinstance(config_yaml.load(path.read_text()), dict), path


class _Counted:
    """An item that counts how often it is repr'd."""

    calls = 0

    def __repr__(self) -> str:
        type(self).calls += 1
        return "x"


def test_a_validation_error_never_reprs_its_whole_input():
    """Describing a bad value costs the same however large it is: a shared structure of 9**5
    items (an alias bomb's shape) is repr'd a few items deep, not whole."""

    class Opts(BaseModel):
        n: int

    value: object = [_Counted()] * 9
    for _ in range(4):
        value = [value] * 9
    with pytest.raises(ValidationError) as e:
        Opts.model_validate({"n": value})
    _Counted.calls = 0
    message = one_line(e.value, Opts)
    assert message.startswith("n: input should be a valid integer") and len(message) < 200
    assert _Counted.calls < 50


# ------------------------------------------------------------- bounds on every number (item 7)
def _numeric_fields(model: type[BaseModel], prefix: str = "") -> list[tuple[str, type]]:
    """(dotted path, int or float) of every numeric field under ``model``, through sections."""
    from agentgym.train.config_errors import _model_of

    found: list[tuple[str, type]] = []
    for name, info in model.model_fields.items():
        sub = _model_of(info.annotation)
        if sub is not None:
            found += _numeric_fields(sub, f"{prefix}{name}.")
            continue
        text = str(info.annotation)
        if "float" in text:
            found.append((prefix + name, float))
        elif "int" in text and "list" not in text:
            found.append((prefix + name, int))
    return found


NUMERIC = _numeric_fields(TrainConfig)
BASE = ["model.path=x", "env.id=NoOp-v0"]


def test_the_walk_finds_every_section():
    names = {name for name, _ in NUMERIC}
    assert {"optim.lr", "seed", "rollout.temperature", "algo.gamma", "sft.batch_size"} <= names
    assert {"model.lora.r", "model.lora.dropout", "env.limit", "threads"} <= names
    assert len(NUMERIC) >= 40


@pytest.mark.parametrize(("name", "kind"), NUMERIC, ids=[n for n, _ in NUMERIC])
def test_every_numeric_field_refuses_what_is_out_of_bounds(name, kind):
    bad = [".nan", ".inf", "-.inf", "-1e30"] if kind is float else [str(-(2**70)), str(2**70)]
    for value in bad:
        with pytest.raises(ValueError) as refused:
            load_config(None, [*BASE, f"{name}={value}"])
        message = str(refused.value)
        assert name.rsplit(".", 1)[-1] in message and "\n" not in message, message
        assert "does not read" not in message, message  # refused for the value, not the key


@pytest.mark.parametrize(
    ("old", "new"),
    [("max_new_tokens", "max_tokens"), ("context_tokens", "max_context_tokens")],
)
def test_a_renamed_rollout_key_is_refused_in_one_line_naming_the_new_one(tmp_path, old, new):
    path = tmp_path / "old.yaml"
    path.write_text(f"model: {{path: x}}\nenv: {{id: NoOp-v0}}\nrollout: {{{old}: 16}}\n")
    with pytest.raises(ValueError) as refused:
        load_config(path)
    assert str(refused.value) == f"{path}: rollout.{old}: renamed to rollout.{new}"
    with pytest.raises(ValueError, match=rf"^override 'rollout.{old}=16': .* rollout\.{new}$"):
        load_config(None, [*BASE, f"rollout.{old}=16"])


@pytest.mark.parametrize("value", [".nan", "-1e30"])
def test_a_bad_learning_rate_is_one_line_before_anything_loads(tiny_model, tmp_path, value):
    out = tmp_path / "out"
    one_line_error(_train(tiny_model, out, f"optim.lr={value}"), f"optim.lr={value}")
    assert not out.exists()


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ("algo.options={beta: .nan}", "finite"),
        ("algo.options={tau: -1e30}", "greater than 0"),
    ],
)
def test_credit_options_have_bounds(options, words):
    with pytest.raises(ValueError, match=words):
        load_config(None, [*BASE, "algo.name=grpo", "algo.credit=infopo", options])


@pytest.mark.parametrize(
    "value", ["{lora_dropout: .nan}", "{tau_start: .inf}", "{lb_coef: -1e30}", "{nope: 1}"]
)
def test_policy_options_are_checked_when_the_config_loads(value):
    with pytest.raises(ValueError, match="model.policy_options of 'pa_moe'"):
        load_config(None, [*BASE, "model.policy=pa_moe", f"model.policy_options={value}"])


# ------------------------------------------------------------ pickled hf weights (item 8)
@pytest.fixture
def pickled_model(tiny_model, tmp_path):
    """The tiny model with its weights as a pickled ``pytorch_model.bin`` whose unpickling also
    runs a command; no safetensors."""
    folder = tmp_path / "pickled"
    shutil.copytree(tiny_model, folder)
    weights = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    bomb = {**weights, "x": _RunsACommand(tmp_path / "pwned")}
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(bomb))
    return folder


def test_eval_refuses_pickled_weights_in_one_line(pickled_model, tmp_path):
    suite = tmp_path / "noop.jsonl"
    write_tasks(suite, noop_suite(1, length=1).tasks)
    args = ["eval", str(suite), "-a", f"hf:{pickled_model}", "--db", str(tmp_path / "r.db")]
    line = one_line_error(runner.invoke(app, args), str(pickled_model / "pytorch_model.bin"))
    assert "only safetensors" in line
    assert not (tmp_path / "pwned").exists()


def test_train_refuses_pickled_weights_in_one_line(pickled_model, tmp_path):
    """Also ``serve`` and every ``hf:`` load: all resolve the folder through the same check."""
    from agentgym.llm.models import PickledCheckpoint, resolve_model_path

    result = runner.invoke(
        app, ["train", "-c", f"model.path={pickled_model}", "-c", "env.id=NoOp-v0"]
    )
    one_line_error(result, "pytorch_model.bin", "only safetensors")
    with pytest.raises(PickledCheckpoint, match="pytorch_model.bin"):
        resolve_model_path(str(pickled_model))
    assert not (tmp_path / "pwned").exists()


def test_pickled_adapter_weights_are_refused(tmp_path):
    from agentgym.llm.models import PickledCheckpoint, resolve_model_path

    (tmp_path / "adapter_config.json").write_text("{}")
    (tmp_path / "adapter_model.bin").write_bytes(b"\x80\x04N.")
    with pytest.raises(PickledCheckpoint, match="adapter_model.bin"):
        resolve_model_path(str(tmp_path))
    (tmp_path / "adapter_model.safetensors").write_bytes(b"")  # safetensors present: no refusal
    assert resolve_model_path(str(tmp_path)) == str(tmp_path)
