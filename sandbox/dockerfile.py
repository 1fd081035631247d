"""Whether our sandbox image can stand in for the container a Dockerfile builds.

Task formats that ship a Dockerfile (Harbor's ``environment/``) often need no more than our image
has: python3, bash, git and pytest. :func:`read_container` accepts a Dockerfile that only names a
base image of that kind, sets ``WORKDIR``, copies text files of its build folder and ``RUN``s
installs of those same packages (:func:`satisfied`), and returns the files it puts where; any
other line raises :class:`ImageNeeded` naming it (that image has to be built where Docker can
pull, and run there).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

HAS = {"python3", "python", "bash", "git", "pytest", "python3-pytest", "procps"}
HAS |= {"python3-pip", "python-is-python3", "ca-certificates", "coreutils"}
"""Packages of our sandbox image: a Dockerfile that installs only these needs no image of its own."""
BASES = re.compile(
    r"^(?:docker\.io/)?(?:library/)?(python|debian|ubuntu|buildpack-deps|agentgym-sandbox)\b"
)
"""Base images whose programs our sandbox image has (with the RUN installs of :data:`HAS`)."""


class ImageNeeded(ValueError):
    """The Dockerfile's container needs an image of its own; the message names the line."""


@dataclass
class Container:
    """What a Dockerfile our sandbox image can stand in for puts in its container."""

    workdir: str = "/"
    files: dict[str, str] = field(default_factory=dict)
    """Text files by container path."""


def dockerfile_lines(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` per instruction, continuations joined, comments dropped."""
    joined = re.sub(
        r"\\\s*\n",
        " ",
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")),
    )
    out = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def satisfied(command: str) -> bool:
    """Whether a ``RUN`` command only installs what our sandbox image has (or cleans up)."""
    for part in re.split(r"&&|;|\|\|", command):
        try:
            words = [w for w in shlex.split(part) if not w.startswith("-")]
        except ValueError:  # unbalanced quotes: not a command we know
            return False
        if not words or words[:2] in (["apt-get", "update"], ["apt-get", "clean"]):
            continue
        if words[0] == "rm" and all(w.startswith("/var/lib/apt/lists") for w in words[1:]):
            continue
        names = _installed(words)
        if names is None or not names <= HAS:
            return False
    return True


def _installed(words: list[str]) -> set[str] | None:
    """The package names an install command asks for (versions dropped); None if not one."""
    for prefix in (
        ["apt-get", "install"],
        ["apt", "install"],
        ["pip", "install"],
        ["pip3", "install"],
        ["python", "-m", "pip", "install"],
        ["python3", "-m", "pip", "install"],
        ["uv", "pip", "install"],
    ):
        kept = [w for w in prefix if not w.startswith("-")]
        if words[: len(kept)] == kept:
            return {re.split(r"[=<>~!\[;]", w, maxsplit=1)[0].lower() for w in words[len(kept) :]}
    return None


def read_container(folder: Path) -> Container:
    """The container ``folder/Dockerfile`` builds (``folder`` is its build context), if our
    sandbox image can stand in for it; :class:`ImageNeeded` naming the first line that needs an
    image of its own."""
    if (folder / "docker-compose.yaml").exists():
        raise ImageNeeded(f"{folder.name}/docker-compose.yaml: several containers")
    dockerfile = folder / "Dockerfile"
    if not dockerfile.is_file():
        raise ImageNeeded(f"no {folder.name}/Dockerfile")
    box = Container()
    for word, args in dockerfile_lines(dockerfile.read_text()):
        if word == "WORKDIR":
            box.workdir = str(PurePosixPath(box.workdir, args))
        elif word in ("COPY", "ADD") and not re.search(r"--from|://", args):
            _copy(folder, box, [a for a in shlex.split(args) if not a.startswith("--")])
        elif word == "RUN" and satisfied(args):
            continue
        elif word == "FROM" and not BASES.match(_image(args)):
            raise ImageNeeded(
                f"{folder.name}/Dockerfile: FROM {args[:120]}: a base image with more than our "
                "sandbox image (python3, bash, git, pytest)"
            )
        elif word not in ("FROM", "LABEL", "CMD", "ENTRYPOINT", "EXPOSE", "ARG", "USER"):
            raise ImageNeeded(
                f"{folder.name}/Dockerfile: {word} {args[:120]} needs an image of its own (built "
                "where Docker can pull); our sandbox image has only python3, bash, git and pytest"
            )
    return box


def _image(args: str) -> str:
    """The image a ``FROM`` line names (``--platform=...`` and ``AS stage`` skipped)."""
    return next((w for w in args.split() if not w.startswith("--")), "")


def _copy(folder: Path, box: Container, args: list[str]) -> None:
    *sources, dest = args
    base = PurePosixPath(box.workdir, dest)
    for source in sources:
        src = (folder / source).resolve()
        if not src.is_relative_to(folder.resolve()) or not src.exists():
            raise ImageNeeded(f"COPY {source}: not a file of {folder.name}/")
        found = [src] if src.is_file() else sorted(p for p in src.rglob("*") if p.is_file())
        for f in found:
            rel = f.relative_to(src).as_posix() if src.is_dir() else None
            into_dir = src.is_dir() or dest.endswith("/") or len(sources) > 1
            target = base / rel if rel else (base / f.name if into_dir else base)
            try:
                box.files[str(target)] = f.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise ImageNeeded(f"COPY {source}: {f.name} is not a text file") from None
