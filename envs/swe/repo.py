"""Building a task's repository on the host and moving it into a sandbox in one archive."""

from __future__ import annotations

import functools
import io
import subprocess
import tarfile
from pathlib import Path

from agentgym.envs.swe.config import (
    GitSource,
    SweConfig,
    allowed_checkout,
    apply_edit,
    git_roots,
)
from agentgym.sandbox import Sandbox

REPOS = Path(__file__).resolve().parent / "data" / "repos"
"""Bundled snapshots, one folder each, with their licences."""
SKIP_PARTS = {"__pycache__", ".pytest_cache", ".git"}
KEEP = {"toolz": ("toolz/", "tlz/", "LICENSE.txt")}
"""Paths of each archive that make up its task repository (the package, its tests, the licence)."""


@functools.lru_cache(maxsize=8)
def bundled(name: str) -> dict[str, str]:
    """Every file of a bundled snapshot, by relative path (cached: tasks share snapshots).

    A snapshot is the project's released source archive, kept verbatim
    (``data/repos/<name>/<name>-<version>.tar.gz``); :data:`KEEP` says which of its paths form
    the task repository.
    """
    known = sorted(p.name for p in REPOS.iterdir() if p.is_dir())
    archives = sorted((REPOS / name).glob("*.tar.gz")) if name in known else []
    if not archives:
        raise ValueError(f"no bundled repository {name!r}; bundled: {', '.join(known)}")
    keep = KEEP.get(name, ("",))
    out = {}
    with tarfile.open(archives[0]) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            path = member.name.split("/", 1)[-1]
            if member.isfile() and path.startswith(keep) and not SKIP_PARTS & set(path.split("/")):
                out[path] = tar.extractfile(member).read().decode("utf-8")  # type: ignore[union-attr]
    return out


def git_files(source: GitSource, roots: list[Path]) -> dict[str, str]:
    """Text files of a host checkout at its commit (binary files are skipped), read only when
    the checkout lies inside ``roots``; the commit reaches git after ``--end-of-options``."""
    path = allowed_checkout(source, roots)
    data = subprocess.run(
        ["git", "-C", str(path), "archive", "--format=tar", "--end-of-options", source.commit],
        capture_output=True,
        check=True,
    ).stdout
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            if member.isfile():
                raw = tar.extractfile(member).read()  # type: ignore[union-attr]
                try:
                    out[member.name] = raw.decode("utf-8")
                except UnicodeDecodeError:
                    continue
    return out


def build_files(config: SweConfig, roots: list[Path] | None = None) -> dict[str, str]:
    """The buggy repository: snapshot or checkout, plus ``files``, then ``edits``. A checkout is
    read only inside ``roots`` (default: :func:`git_roots`, what the host's operator allowed)."""
    if config.repo:
        files = dict(bundled(config.repo))
    elif config.git:
        files = git_files(config.git, git_roots() if roots is None else roots)
    else:
        files = {}
    files.update(config.files)
    for edit in config.edits:
        files[edit.path] = apply_edit(files.get(edit.path, ""), edit)
    return files


def to_tar(files: dict[str, str]) -> bytes:
    """A tar archive of ``files`` (deterministic: sorted, fixed times and owners)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in sorted(files):
            data = files[path].encode("utf-8")
            info = tarfile.TarInfo(path)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


SETUP = (
    "mkdir -p repo && tar -xf .repo.tar -C repo && rm .repo.tar && cd repo && "
    "git init -q && git add -A && git -c user.name=agentgym -c user.email=agentgym@sandbox "
    "commit -qm 'base' --no-gpg-sign && echo ok"
)


def install(sandbox: Sandbox, files: dict[str, str]) -> str:
    """Unpack ``files`` into ``<workdir>/repo`` as a fresh git repository; return the repo path."""
    sandbox.write_file(".repo.tar", to_tar(files))
    result = sandbox.exec(SETUP, timeout=120)
    if result.stdout.strip() != "ok":
        raise RuntimeError(f"could not set up the repository: {result.stderr[-1000:]}")
    return f"{sandbox.workdir}/repo"
