"""The GPU run rehearsed on this CPU: a venv holding only packages the lent GPU image has (CPU
torch standing in for its CUDA build), the wheelhouse scripts/gpu_wheelhouse.py builds, installed
as benchmarks/gpu.sh installs it there, and gpu.sh's smoke settings end to end."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from agentgym.cache import cache_dir
from agentgym.llm.models import is_fetched

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import gpu_wheelhouse  # noqa: E402

IMAGE = gpu_wheelhouse.read_image(gpu_wheelhouse.IMAGE_LIST)
STAND_IN = {"torch": "2.13.0", "numpy": None}
"""Image packages installed at another version here: torch's CPU build on this disk (the image's
is 2.11.0+cu130), numpy unpinned (the image's 2.5.2 needs Python 3.12)."""
TRAIN_PATH = ["torch", "transformers", "safetensors", "huggingface-hub", "jinja2", "httpx"]
"""Image packages the train path uses beyond what the wheelhouse relies on (the wheelhouse's
image-requirements.txt): transformers' hub and chat-template packages, and httpx."""


def requirements(relied: list[str]) -> list[str]:
    """TRAIN_PATH and ``relied`` at the image's versions where its list records them and this
    Python takes them."""
    out = []
    for name in dict.fromkeys([*TRAIN_PATH, *relied]):
        version = STAND_IN[name] if name in STAND_IN else IMAGE[name]
        out.append(f"{name}=={version}" if version else name)
    return out


def pip(python: Path, *args: str) -> None:
    done = subprocess.run([str(python), "-m", "pip", *args], capture_output=True, text=True)
    assert done.returncode == 0, f"pip {' '.join(args[:2])}: {done.stderr[-1500:]}"


def installed(python: Path) -> set[str]:
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format", "freeze"], capture_output=True, text=True,
        check=True,
    ).stdout  # fmt: skip
    return {canonicalize_name(line.split("==")[0]) for line in listed.split()}


def image_venv(reqs: list[str]) -> Path:
    """A venv of the image's packages ``reqs`` alone, cached by its package list: pip pulls in
    what they need, and whatever of that the image does not list is uninstalled again."""
    key = hashlib.sha256("\n".join([sys.version, *reqs, *sorted(IMAGE)]).encode()).hexdigest()
    venv = cache_dir() / "gpu-rehearsal" / f"venv-{key[:12]}"
    python = venv / "bin" / "python"
    if (venv / "ready").is_file():
        return python
    building = venv.with_name(f"{venv.name}.{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(building)], check=True)
    staged = building / "bin" / "python"
    pip(staged, "install", "--quiet", *reqs)
    extra = sorted(installed(staged) - set(IMAGE))
    if extra:
        pip(staged, "uninstall", "--yes", *extra)
    (building / "ready").write_text("\n".join(reqs) + "\n")
    try:
        building.rename(venv)  # a venv runs from a new folder through bin/python
    except OSError:  # another run finished the same venv first
        shutil.rmtree(building)
        assert (venv / "ready").is_file(), f"{venv} exists but is not ready: remove it"
    return python


def test_image_venv_requirements_pin_the_image_versions():
    reqs = requirements(["accelerate", "pluggy", "numpy", "torch"])
    assert reqs[:2] == ["torch==2.13.0", "transformers==5.17.0"] and "jinja2" in reqs
    assert reqs[-3:] == ["accelerate==1.15.0", "pluggy", "numpy"]
    assert set(map(canonicalize_name, TRAIN_PATH)) <= set(IMAGE)


def gpu_script(out: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """benchmarks/gpu.sh OUT, with this environment less PYTHONPATH, plus ``env``."""
    full = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | env
    return subprocess.run(
        ["bash", "benchmarks/gpu.sh", str(out)], cwd=ROOT, env=full, capture_output=True,
        text=True, timeout=1500,
    )  # fmt: skip


def test_gpu_script_takes_vllm_where_it_imports(tmp_path):
    fake = tmp_path / "site" / "vllm"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    done = gpu_script(
        tmp_path / "run", PYTHONPATH=str(fake.parent), MODEL=str(tmp_path / "model"),
        KBQA_S="1", HOUSEHOLD_S="1", CUDA_VISIBLE_DEVICES="",
    )  # fmt: skip
    assert "engine: vllm;" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 124  # both parts stopped by their 1 s budgets
    assert done.stdout.count("(no seed finished)") == 2


@pytest.mark.slow
@pytest.mark.timeout(2400)
@pytest.mark.skipif(not is_fetched("smollm2"), reason="hf:smollm2 not fetched")
def test_gpu_script_runs_on_the_image_packages_plus_the_wheelhouse(tmp_path):
    wheels, model, results = tmp_path / "whl", tmp_path / "model", tmp_path / "results"
    built = subprocess.run(
        [sys.executable, "scripts/gpu_wheelhouse.py", "--python", "3.11", "--out", str(wheels)],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-1500:] + built.stderr[-1500:]
    python = image_venv(requirements((wheels / gpu_wheelhouse.RELIED).read_text().split()))
    assert installed(python) <= set(IMAGE), "the rehearsal venv holds a package the image lacks"
    lacks = subprocess.run([str(python), "-c", "import pydantic"], capture_output=True)
    assert lacks.returncode != 0, "the rehearsal venv has pydantic: the wheelhouse is not tested"
    subprocess.run(
        [sys.executable, "scripts/gpu_smoke_model.py", "--out", str(model)], cwd=ROOT, check=True,
        capture_output=True,
    )  # fmt: skip
    env = {
        "MODEL": str(model), "PYTHON": str(python), "WHEELS": str(wheels),
        "SITE": str(tmp_path / "site"), "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1",
    }  # fmt: skip
    full = gpu_script(tmp_path / "full", KBQA_S="1", HOUSEHOLD_S="1", **env)
    assert "engine: local;" in full.stdout, full.stdout + full.stderr  # no vllm in the image
    done = gpu_script(tmp_path / "run", TINY="1", RESULTS=str(results), **env)
    logs = "".join(p.read_text()[-1500:] for p in sorted(results.glob("*.log")))
    assert done.returncode == 0, done.stdout[-1500:] + done.stderr[-1500:] + logs
    assert f"installed {len(list(wheels.glob('*.whl')))} wheels" in done.stdout
    assert "engine: local" in done.stdout
    assert (results / "device.txt").read_text().startswith("cpu torch 2.13.0")
    for part in ("kbqa", "household"):
        tables = (results / f"{part}-tables.md").read_text()
        assert "| untrained |" in tables and "| after RL |" in tables
        assert (results / f"{part}-results.json").is_file() and (results / f"{part}.log").is_file()
    assert len(list(results.iterdir())) <= 8  # what the device tool brings back from $OUT
