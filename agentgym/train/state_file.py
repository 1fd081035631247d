"""The trainer's resumable state (optimizer, extra modules, RNGs, step) as data, never a pickle.

Tensors go to ``trainer_state.safetensors``; everything else (the optimizer's parameter groups, the
Python and NumPy RNG states, the step, the config) to ``trainer_state.json``, written last, so its
presence marks a finished checkpoint. Unpickling can run any code (a crafted ``trainer_state.pt``
ran ``os.system`` when a run resumed); reading these two formats runs nothing. A state file that is
pickled, corrupt or does not fit the run is refused with one line naming the file.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentgym.train.config_errors import one_line

TENSORS = "trainer_state.safetensors"
STATE = "trainer_state.json"
PICKLED = "trainer_state.pt"
"""What earlier versions wrote (``torch.save``): never loaded, refused by name."""
FORMAT = 1

Scalar = float | int | bool | str | None


class StateRefused(ValueError):
    """A trainer state that is pickled, corrupt, or does not fit the run; the message is one line
    that names the file."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _PythonRNG(_Strict):
    version: int
    internal: list[int] = Field(min_length=625, max_length=625)
    gauss_next: float | None


class _NumpyRNG(_Strict):
    keys: list[int] = Field(min_length=624, max_length=624)
    pos: int
    has_gauss: int
    cached_gaussian: float


class _Optimizer(_Strict):
    param_groups: list[dict[str, Scalar | list[Scalar]]]
    scalars: dict[str, dict[str, Scalar]] = {}
    """Per-parameter state that is not a tensor (its tensors are in the safetensors file)."""


class StateMeta(_Strict):
    """``trainer_state.json``."""

    format: Literal[1]
    step: int = Field(ge=0)
    optimizer: _Optimizer
    python_rng: _PythonRNG
    numpy_rng: _NumpyRNG
    config: dict[str, Any] = {}


def write(
    directory: Path,
    optimizer: torch.optim.Optimizer,
    extra: dict[str, torch.nn.Module],
    step: int,
    config: dict[str, Any],
) -> None:
    """Write the state into ``directory``: tensors first, the JSON that completes it last."""
    from safetensors.torch import save_file

    tensors: dict[str, torch.Tensor] = {"rng/torch": torch.get_rng_state()}
    saved = optimizer.state_dict()
    scalars: dict[str, dict[str, Any]] = {}
    for pid, values in saved["state"].items():
        for key, value in values.items():
            if isinstance(value, torch.Tensor):
                tensors[f"optimizer/{pid}/{key}"] = value.detach().contiguous()
            else:
                scalars.setdefault(str(pid), {})[key] = value
    for name, module in extra.items():
        for key, value in module.state_dict().items():
            tensors[f"extra/{name}/{key}"] = value.detach().contiguous()
    version, internal, gauss_next = random.getstate()
    _, keys, pos, has_gauss, cached = np.random.get_state(legacy=True)
    meta = {
        "format": FORMAT,
        "step": step,
        "optimizer": {"param_groups": saved["param_groups"], "scalars": scalars},
        "python_rng": {"version": version, "internal": list(internal), "gauss_next": gauss_next},
        "numpy_rng": {
            "keys": [int(k) for k in keys],
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "config": config,
    }
    text = json.dumps(meta, indent=1)  # before any file is written: a bad value leaves none
    save_file(tensors, directory / TENSORS)
    partial = directory / (STATE + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, directory / STATE)


def restore(
    directory: Path, optimizer: torch.optim.Optimizer, extra: dict[str, torch.nn.Module]
) -> int:
    """Load the state written by :func:`write` into the optimizer, the extra modules and the
    RNGs; return its step. :class:`StateRefused` (one line naming the file) otherwise."""
    meta, tensors = read(directory)
    try:
        optimizer.load_state_dict(_optimizer_state(meta, tensors, optimizer))
        for name, module in extra.items():
            prefix = f"extra/{name}/"
            module.load_state_dict(
                {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}
            )
        py = meta.python_rng
        random.setstate((py.version, tuple(py.internal), py.gauss_next))
        rng = meta.numpy_rng
        keys = np.array(rng.keys, dtype=np.uint32)
        np.random.set_state(("MT19937", keys, rng.pos, rng.has_gauss, rng.cached_gaussian))
        torch.set_rng_state(tensors["rng/torch"])
    except (KeyError, ValueError, TypeError, RuntimeError, OverflowError) as e:
        raise StateRefused(
            f"{directory / TENSORS}: does not fit this run: {_first_line(e)}"
        ) from None
    return meta.step


def read(directory: Path) -> tuple[StateMeta, dict[str, torch.Tensor]]:
    """The JSON and the tensors of ``directory``'s state, checked; refused in one line."""
    meta = check(directory)
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        tensors = load_file(directory / TENSORS)
    except (SafetensorError, OSError, ValueError) as e:
        raise StateRefused(
            f"{directory / TENSORS}: not a safetensors file: {_first_line(e)}"
        ) from None
    return meta, tensors


def check(directory: Path) -> StateMeta:
    """``directory``'s ``trainer_state.json``, validated, and the tensors file's header; a
    pickled state (the old ``trainer_state.pt``) is refused unread."""
    path = directory / STATE
    if not path.is_file():
        if (directory / PICKLED).is_file():
            raise StateRefused(
                f"{directory / PICKLED}: a pickled trainer state is never loaded (unpickling can "
                f"run code); only {TENSORS} with {STATE} are. Resume from a checkpoint this "
                "version wrote, or start afresh (resume=false or another out_dir)"
            )
        raise StateRefused(f"{path}: no trainer state here")
    try:
        meta = StateMeta.model_validate_json(path.read_bytes())
    except ValidationError as e:
        raise StateRefused(
            f"{path}: not a trainer state: {_clip(one_line(e, StateMeta))}"
        ) from None
    except OSError as e:
        raise StateRefused(f"{path}: cannot be read: {e.strerror or e}") from None
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(directory / TENSORS, framework="pt") as f:
            names = set(f.keys())
    except (SafetensorError, OSError, ValueError) as e:
        raise StateRefused(
            f"{directory / TENSORS}: not a safetensors file: {_first_line(e)}"
        ) from None
    if "rng/torch" not in names:
        raise StateRefused(f"{directory / TENSORS}: not a trainer state: no rng/torch tensor")
    return meta


def _optimizer_state(
    meta: StateMeta, tensors: dict[str, torch.Tensor], optimizer: torch.optim.Optimizer
) -> dict[str, Any]:
    """The optimizer's ``state_dict`` back from its flat form; values that are tuples in the live
    optimizer's groups (AdamW's ``betas``) are tuples again, as JSON made them lists."""
    state: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        if key.startswith("optimizer/"):
            _, pid, name = key.split("/", 2)
            state.setdefault(int(pid), {})[name] = value
    for pid, values in meta.optimizer.scalars.items():
        state.setdefault(int(pid), {}).update(values)
    groups = []
    for i, group in enumerate(meta.optimizer.param_groups):
        live = optimizer.param_groups[i] if i < len(optimizer.param_groups) else {}
        groups.append(
            {
                k: tuple(v) if isinstance(v, list) and isinstance(live.get(k), tuple) else v
                for k, v in group.items()
            }
        )
    return {"state": state, "param_groups": groups}


def _first_line(e: BaseException) -> str:
    text = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
    return _clip(text.strip().splitlines()[0] if text.strip() else type(e).__name__)


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
