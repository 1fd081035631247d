"""The code the sandbox image carries: the agentgym package and the libraries its worker imports.

The env worker (``python -m agentgym.sandbox.worker``) runs inside the container with the image's
Python, so the image needs agentgym (whatever way it is installed here: editable, wheel) and the
third-party modules that importing agentgym and every registered env pulls in. We copy exactly
those from this host, found by importing them in a child process, so the image matches the host.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import importlib.util
import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from site import getsitepackages

PACKAGES = ["agentgym", "agentgym.envs", "agentgym.agents", "agentgym.sandbox", "agentgym.tasks"]
"""The package-dir mapping of the distribution, rebuilt as one plain tree."""
HEAVY = {"torch", "transformers", "triton", "nvidia", "ray", "tensorflow", "jax", "vllm"}
"""Never copied: an env that needs these needs a purpose-built image."""
SKIP = HEAVY | {"agentgym", "_distutils_hack"}
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache", ".pytest_cache")
PROBE = """
import importlib, json, sys
import agentgym, agentgym.sandbox.worker
for extra in sys.argv[1:]:
    importlib.import_module(extra)
for s in agentgym.list_envs():
    try:
        s.load()
    except Exception:
        pass
out = {}
for name, mod in list(sys.modules.items()):
    if "." not in name and getattr(mod, "__file__", None):
        out[name] = mod.__file__
    elif "." not in name and list(getattr(mod, "__path__", [])):  # a namespace package
        for folder in mod.__path__:
            out.setdefault(name, folder)
print(json.dumps(out))
"""


def package_dirs() -> dict[str, Path]:
    """Where each agentgym (sub)package lives on this host."""
    out = {}
    for pkg in PACKAGES:
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(f"cannot locate package {pkg}; is agentgym installed?")
        out[pkg] = Path(list(spec.submodule_search_locations)[0])
    return out


def code_hash() -> str:
    """Hash of every agentgym source and data file: the image label that detects stale images."""
    h = hashlib.sha256()
    for pkg, root in sorted(package_dirs().items()):
        for f in sorted(root.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
                h.update(f"{pkg}/{f.relative_to(root)}".encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:16]


def copy_code(dst: Path, extra: tuple[str, ...] = ()) -> list[str]:
    """Write agentgym and the worker's third-party modules under ``dst``; return their names.
    ``extra``: more modules whose imports come too (``agentgym.integrations.openenv.server``
    for the env server's image)."""
    for pkg, src in package_dirs().items():
        shutil.copytree(src, dst / pkg.replace(".", "/"), ignore=IGNORE, dirs_exist_ok=True)
    _write_dist_info(dst)
    names = ["agentgym"]
    # this Python's package folders, a venv's system site-packages too (where it sees them)
    site = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    site |= {Path(p).resolve() for p in getsitepackages()}
    for name, file in sorted(_imported_modules(extra).items()):
        path = Path(file).resolve()
        if (
            name in SKIP
            or name.startswith("__editable__")
            or not any(s in path.parents for s in site)
        ):
            continue
        top = path.parent if path.name == "__init__.py" else path
        target = dst / top.name
        if top.is_dir():
            shutil.copytree(top, target, ignore=IGNORE, dirs_exist_ok=True)
        else:
            shutil.copy2(top, target)
        # manylinux wheels vendor shared libraries, named after the module or the distribution
        # (PIL's are in pillow.libs)
        for stem in {
            name,
            *(d.replace("-", "_") for d in md.packages_distributions().get(name, [])),
        }:
            for libs in top.parent.glob(f"{stem}*.libs"):
                shutil.copytree(libs, dst / libs.name, dirs_exist_ok=True)
        _copy_metadata(name, dst)
        names.append(name)
    return names


def _imported_modules(extra: tuple[str, ...] = ()) -> dict[str, str]:
    argv = [sys.executable, "-c", PROBE, *extra]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"importing agentgym to list its dependencies failed:\n{proc.stderr}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def _write_dist_info(dst: Path) -> None:
    """Metadata and entry points of agentgym, so built-in envs register inside the image."""
    dist = md.distribution("agentgym")
    info = dst / f"agentgym-{dist.version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: agentgym\nVersion: {dist.version}\n"
    )
    (info / "entry_points.txt").write_text(dist.read_text("entry_points.txt") or "")


def _copy_metadata(module: str, dst: Path) -> None:
    for dist_name in md.packages_distributions().get(module, []):
        dist = md.distribution(dist_name)
        meta = dist.read_text("METADATA") or f"Metadata-Version: 2.1\nName: {dist_name}\n"
        info = dst / f"{dist_name.replace('-', '_')}-{dist.version}.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(meta)
        entry_points = dist.read_text("entry_points.txt")
        if entry_points:
            (info / "entry_points.txt").write_text(entry_points)
