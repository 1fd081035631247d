"""``agentgym sandbox build | doctor | cleanup``: the image, what works here, and leftover containers."""

from __future__ import annotations

import shutil
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agentgym.sandbox.config import IMAGE

sandbox_app = typer.Typer(no_args_is_help=True, help="Build the sandbox image, check, clean up.")
console = Console()
err = Console(stderr=True, soft_wrap=True)


def _client() -> object:
    from agentgym.sandbox.base import SandboxError
    from agentgym.sandbox.docker_provider import docker_client

    try:
        return docker_client()
    except SandboxError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(2) from None


@sandbox_app.command()
def build(
    no_pull: Annotated[
        bool,
        typer.Option(
            "--no-pull",
            help="Pull no image: debootstrap a Debian rootfs from --mirror + docker import",
        ),
    ] = False,
    tag: Annotated[str, typer.Option(help="Image tag to build")] = IMAGE,
    rebuild_base: Annotated[bool, typer.Option(help="Rebuild the base image too")] = False,
    mirror: Annotated[
        str, typer.Option(help="Debian mirror for --no-pull (packages still come from it)")
    ] = "http://deb.debian.org/debian",
) -> None:
    """Build the sandbox image (python3, git, pytest, the agentgym worker code)."""
    from agentgym.sandbox import image

    client = _client()
    try:
        image.build(
            client,
            tag,
            no_pull,
            rebuild_base,
            mirror,
            log=lambda m: err.print(escape(m), highlight=False),
        )
    except RuntimeError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(1) from None


@sandbox_app.command()
def doctor() -> None:
    """Say which providers work on this machine and why the others do not."""
    table = Table("check", "status", "detail")
    table.add_row("bubblewrap (local provider)", *_bwrap())
    client = None
    try:
        from agentgym.sandbox.docker_provider import docker_client

        client = docker_client(timeout=10)
        table.add_row("docker engine", *_ok(True, str(client.version().get("Version"))))  # type: ignore[attr-defined]
    except Exception as e:
        table.add_row("docker engine", *_ok(False, str(e)))
    if client is not None:
        from agentgym.sandbox.image import image_status

        status = image_status(client, IMAGE)
        hint = {
            "missing": "run `agentgym sandbox build` (or --no-pull)",
            "stale": "agentgym code changed since the build: rebuild",
        }
        table.add_row(f"image {IMAGE}", *_ok(status == "current", hint.get(status, status)))
    found = shutil.which("debootstrap")  # the detail says what was found, or how to get it
    table.add_row(
        "debootstrap (--no-pull build)",
        *_ok(found is not None, found or "not found: apt-get install -y debootstrap"),
    )
    console.print(table)


def _ok(ok: bool, detail: str) -> tuple[str, str]:
    """The status and detail cells; the detail is plain text (``pip install ".[sandbox]"`` keeps
    its brackets, which rich would read as markup)."""
    return ("[green]ok[/green]" if ok else "[red]no[/red]", escape(detail))


def _bwrap() -> tuple[str, str]:
    """Whether bubblewrap works here, and if not, what to do about it."""
    from agentgym.sandbox.local import bwrap_works

    if shutil.which("bwrap") is None:
        return _ok(False, "not found: apt-get install -y bubblewrap")
    if bwrap_works():
        return _ok(True, "bwrap can create namespaces")
    return _ok(
        False,
        "bwrap is installed but cannot create namespaces here: allow unprivileged user "
        "namespaces (sysctl kernel.unprivileged_userns_clone=1; in a container, run it with "
        "--privileged or --security-opt seccomp=unconfined), or use the docker provider",
    )


@sandbox_app.command()
def cleanup(
    all_: Annotated[
        bool, typer.Option("--all", help="Remove every agentgym container, live owners too")
    ] = False,
    older_than: Annotated[
        float | None, typer.Option(help="Also remove containers older than this many seconds")
    ] = None,
) -> None:
    """Remove sandbox containers and local folders whose owner process died (crash, kill -9)."""
    from agentgym.sandbox.reaper import reap_local_folders, reap_orphans

    for folder in reap_local_folders():
        console.print(f"removed {folder} (owner process is gone)", highlight=False)
    removed = reap_orphans(_client(), everything=all_, older_than_s=older_than)
    for r in removed:
        console.print(
            f"removed {r.name} ({r.status}; {r.reason}; owner {r.owner})", highlight=False
        )
    console.print(f"{len(removed)} container(s) removed")
