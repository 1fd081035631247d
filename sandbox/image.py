"""Building the sandbox image: a base (python3, git, pytest, user 1000) plus the agentgym code layer.

Two ways to the base: ``images/Dockerfile`` (``FROM python:3.11-slim``) where Docker Hub is
reachable, and an offline path that needs only a Debian mirror: ``debootstrap`` a minimal rootfs,
add the same user and git settings, and ``docker import`` it. The code layer
(``images/Dockerfile.code``) copies the agentgym package and the libraries its env worker imports
from this host, so ``isolate="docker"`` runs the same code as the host; its hash is stored as an
image label so ``doctor`` can tell when the image is stale.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from agentgym.sandbox.code import code_hash, copy_code
from agentgym.sandbox.config import IMAGE

BASE_IMAGE = "agentgym-sandbox-base"
CODE_LABEL = "agentgym.code"
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_PACKAGES = ["python3", "python3-pytest", "git", "procps", "ca-certificates"]
TRIM = [
    "var/cache/apt/archives",
    "var/lib/apt/lists",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/locale",
]
"""Rootfs folders emptied before import (caches and docs: a quarter of the size)."""
SETUP = """\
set -e
echo 'agent:x:1000:1000:agent:/work:/bin/bash' >> etc/passwd
echo 'agent:x:1000:' >> etc/group
mkdir -p work opt/agentgym/python
ln -sf python3 usr/bin/python
printf '[user]\\n\\tname = agent\\n\\temail = agent@sandbox\\n[safe]\\n\\tdirectory = *\\n' > etc/gitconfig
"""
"""Run in the rootfs: the same user and git settings the Dockerfile makes."""
IMPORT_CHANGES = [
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    "ENV HOME=/work",
    "ENV PYTHONDONTWRITEBYTECODE=1",
    "WORKDIR /work",
]

Log = Callable[[str], None]


def base_tag(offline: bool) -> str:
    """Tag of the base image: one per build path and host Python (the code layer must match it)."""
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    return f"{BASE_IMAGE}:{DEBIAN_SUITE}" if offline else f"{BASE_IMAGE}:py{py}"


def build(
    client: Any,
    tag: str = IMAGE,
    offline: bool = False,
    rebuild_base: bool = False,
    mirror: str = DEBIAN_MIRROR,
    log: Log = print,
) -> str:
    """Build (or reuse) the base, then the code layer as ``tag``; return the image id."""
    base = base_tag(offline)
    if rebuild_base or not has_image(client, base):
        if offline:
            build_base_offline(client, base, mirror, log)
        else:
            build_base_dockerfile(client, base, log)
    else:
        log(f"base image {base} is present (use --rebuild-base to rebuild it)")
    return build_code_layer(client, base, tag, log)


def build_base_dockerfile(client: Any, base: str, log: Log) -> None:
    """``images/Dockerfile`` (pulls ``python:X.Y-slim``)."""
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    log(f"building {base} from images/Dockerfile (FROM python:{py}-slim)")
    with resources.as_file(resources.files("agentgym.sandbox").joinpath("images")) as ctx:
        client.images.build(path=str(ctx), tag=base, buildargs={"PYTHON": py}, rm=True, pull=True)


def build_base_offline(client: Any, base: str, mirror: str, log: Log) -> None:
    """debootstrap a minimal Debian with python3, git and pytest, then ``docker import`` it."""
    missing = [t for t in ("debootstrap", "tar") if shutil.which(t) is None]
    if missing or os.geteuid() != 0:
        raise RuntimeError(
            "the offline build needs root and debootstrap "
            f"({'missing: ' + ', '.join(missing) if missing else 'not running as root'}); "
            "install it with `apt-get install -y debootstrap` and rerun as root"
        )
    with tempfile.TemporaryDirectory(prefix="agentgym-rootfs-") as tmp:
        root = Path(tmp) / "root"
        log(f"debootstrap {DEBIAN_SUITE} from {mirror} (about a minute)")
        _run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(DEBIAN_PACKAGES)}",
                DEBIAN_SUITE,
                str(root),
                mirror,
            ]
        )
        for sub in TRIM:
            shutil.rmtree(root / sub, ignore_errors=True)
            (root / sub).mkdir(parents=True, exist_ok=True)
        _run(["sh", "-c", SETUP], cwd=root)
        tarball = Path(tmp) / "rootfs.tar"
        _run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(tarball), "."])
        log(f"docker import -> {base}")
        repo, _, version = base.partition(":")
        client.api.import_image_from_file(
            str(tarball), repository=repo, tag=version, changes=IMPORT_CHANGES
        )


def build_code_layer(client: Any, base: str, tag: str, log: Log) -> str:
    """The agentgym package and the worker's libraries on top of ``base``, labelled with a hash."""
    with tempfile.TemporaryDirectory(prefix="agentgym-code-") as tmp:
        ctx = Path(tmp)
        dockerfile = resources.files("agentgym.sandbox").joinpath("images/Dockerfile.code")
        (ctx / "Dockerfile").write_text(dockerfile.read_text(encoding="utf-8"))
        copied = copy_code(ctx / "python")
        log(f"code layer: {len(copied)} packages ({', '.join(sorted(copied)[:12])} ...)")
        image, _ = client.images.build(
            path=str(ctx),
            tag=tag,
            buildargs={"BASE": base},
            labels={CODE_LABEL: code_hash()},
            rm=True,
            pull=False,
        )
    log(f"built {tag} ({image.short_id})")
    return str(image.id)


def image_status(client: Any, tag: str = IMAGE) -> str:
    """``missing``, ``stale`` (code changed since the build) or ``current``."""
    if not has_image(client, tag):
        return "missing"
    labels = client.images.get(tag).labels or {}
    return "current" if labels.get(CODE_LABEL) == code_hash() else "stale"


def has_image(client: Any, tag: str = IMAGE) -> bool:
    """Whether the engine holds ``tag``."""
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def _run(argv: list[str], cwd: Path | None = None) -> None:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout)[-2000:]
        raise RuntimeError(f"{' '.join(argv[:3])} ... failed with exit {proc.returncode}:\n{tail}")
