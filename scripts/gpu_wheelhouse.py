"""Build the wheelhouse a lent GPU machine needs for agentgym's train path, on this machine.

    python3 scripts/gpu_wheelhouse.py                           # .whl/ for the image's Python 3.12
    python3 scripts/gpu_wheelhouse.py --python 3.11 --out DIR   # for this machine (CPU rehearsal)

The GPU image (its package list: scripts/gpu-image-packages.txt) has torch, transformers, peft and
accelerate but no pydantic, gymnasium or sqlite-utils, and it reaches no package registry. What it
lacks travels as wheels in the working tree. This script writes them to one folder:

- agentgym itself (``pip wheel --no-deps .``): its entry points register the built-in envs;
- every requirement of agentgym's base dependencies and its ``train`` extra that the image lacks,
  followed through each downloaded wheel's ``Requires-Dist`` (markers evaluated for the target
  Python on Linux x86_64), each at the version installed here (the one the tests ran) or, where
  none is installed, the newest; downloaded with ``--no-deps --only-binary=:all:`` for
  manylinux_2_28 or older. The image's packages it relies on are listed in the wheelhouse's
  image-requirements.txt.

A requirement on an image package whose version the list records, and that this version fails,
stops the build: the run there would fail on import. A call to the device carries the working tree
and the wheelhouse, at most 64 MiB together: the script prints both sizes and exits 1 when over.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the script runs on this machine's Python 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
IMAGE_LIST = ROOT / "scripts" / "gpu-image-packages.txt"
LIMIT_MIB = 64
"""The device tool's limit on what one call carries: the working tree plus carried paths."""
RELIED = "image-requirements.txt"
"""Written into the wheelhouse: the image's packages it relies on, one a line (the CPU rehearsal
installs them)."""
PLATFORMS = [f"manylinux_2_{n}_x86_64" for n in range(28, 16, -1)] + [
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
]
"""Wheel tags both the image (torch's manylinux_2_28 wheels run there) and this machine accept."""


class BuildError(RuntimeError):
    """The wheelhouse cannot be built; the message is one line that says why."""


def read_image(path: Path) -> dict[str, str | None]:
    """The image's packages: canonical name -> version where the list records one, else None."""
    image: dict[str, str | None] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            image[canonicalize_name(name)] = version or None
    return image


def agentgym_requirements(pyproject: Path) -> list[Requirement]:
    """agentgym's base dependencies and its ``train`` extra."""
    project = tomllib.loads(pyproject.read_text())["project"]
    specs = project["dependencies"] + project["optional-dependencies"]["train"]
    return [Requirement(spec) for spec in specs]


def marker_environment(python: str) -> dict[str, str]:
    """Marker variables of CPython ``python`` (for example "3.12") on Linux x86_64."""
    return {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "implementation_version": f"{python}.0",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "os_name": "posix",
        "extra": "",
    }


def applies(req: Requirement, environment: dict[str, str]) -> bool:
    return req.marker is None or req.marker.evaluate(environment)


def wheel_requirements(wheel: Path) -> list[Requirement]:
    """The ``Requires-Dist`` lines of a wheel's METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(name).decode())
    return [Requirement(line) for line in metadata.get_all("Requires-Dist") or []]


def pip(*args: str) -> None:
    """Run pip; a failure raises :class:`BuildError` with pip's last line."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise BuildError(f"pip {args[0]} {args[-1]} failed: {last}")


def download(name: str, python: str, out: Path) -> Path:
    """Download one binary wheel of ``name`` for ``python`` into ``out``; return its path."""
    try:
        pin = f"{name}=={importlib.metadata.version(name)}"
    except importlib.metadata.PackageNotFoundError:
        pin = name
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    before = set(out.glob("*.whl"))
    pip(
        "download", "--no-deps", "--only-binary=:all:", "--python-version", python,
        "--implementation", "cp", *platforms, "--dest", str(out), "--quiet", pin,
    )  # fmt: skip
    new = set(out.glob("*.whl")) - before
    if len(new) != 1:
        raise BuildError(f"pip download {pin} left {len(new)} new wheels in {out}, not one")
    return new.pop()


def check_image_version(req: Requirement, image: dict[str, str | None], wanted_by: str) -> None:
    version = image[canonicalize_name(req.name)]
    if version is not None and not req.specifier.contains(version, prereleases=True):
        raise BuildError(
            f"the image's {req.name} {version} fails {wanted_by}'s requirement '{req}': "
            "carry that package too (drop its version from the image list to do so)"
        )


def build(out: Path, python: str, image: dict[str, str | None]) -> list[Path]:
    """Fill ``out`` with agentgym's wheel and the wheels of what the image lacks."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.whl"):
        old.unlink()  # one version of each package: two stop the install there
    pip("wheel", "--no-deps", "--no-build-isolation", "--quiet", "--wheel-dir", str(out), str(ROOT))
    environment = marker_environment(python)
    queue = [(req, "agentgym") for req in agentgym_requirements(ROOT / "pyproject.toml")]
    seen = {"agentgym"}
    relied: set[str] = set()
    while queue:
        req, wanted_by = queue.pop(0)
        name = canonicalize_name(req.name)
        if not applies(req, environment):
            continue
        if name in image:
            check_image_version(req, image, wanted_by)
            relied.add(name)
            continue
        if name in seen:
            continue
        seen.add(name)
        wheel = download(name, python, out)
        print(f"  {wheel.name}", flush=True)
        queue += [(dep, name) for dep in wheel_requirements(wheel)]
    (out / RELIED).write_text("".join(f"{name}\n" for name in sorted(relied)))
    return sorted(out.glob("*.whl"))


def tree_bytes(root: Path) -> int:
    """Bytes of what a device call sends: tracked and untracked-not-ignored files, and shared/."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root, capture_output=True, check=True,
    ).stdout.split(b"\0")  # fmt: skip
    files = {root / name.decode() for name in listed if name}
    shared = root / "shared"
    if shared.is_dir():
        files |= {path for path in shared.rglob("*") if not path.is_symlink()}
    return sum(path.stat().st_size for path in files if path.is_file())


def mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="3.12", help="target Python (the image's: 3.12)")
    parser.add_argument("--out", type=Path, default=ROOT / ".whl", help="the wheelhouse folder")
    parser.add_argument("--image", type=Path, default=IMAGE_LIST, help="the image's package list")
    parser.add_argument(
        "--carry", type=Path, action="append", default=[],
        help="another carried folder counted in the total (.gpu-model: scripts/gpu_smoke_model.py)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    try:
        print(f"wheelhouse for CPython {args.python} in {args.out}:", flush=True)
        wheels = build(args.out, args.python, read_image(args.image))
    except BuildError as error:
        print(f"gpu_wheelhouse: {error}", file=sys.stderr)
        return 1
    house = sum(wheel.stat().st_size for wheel in wheels)
    tree = tree_bytes(ROOT)
    carried = sum(p.stat().st_size for c in args.carry for p in c.rglob("*") if p.is_file())
    total = house + tree + carried
    also = f", {', '.join(map(str, args.carry))} ({mib(carried)})" if args.carry else ""
    print(
        f"{len(wheels)} wheels, {mib(house)}; with the working tree ({mib(tree)}){also}: "
        f"{mib(total)} of the {LIMIT_MIB} MiB one device call carries"
    )
    if total > LIMIT_MIB * 2**20:
        print(f"gpu_wheelhouse: over the {LIMIT_MIB} MiB a device call carries", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
