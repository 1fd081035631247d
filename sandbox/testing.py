"""Test helpers: require Docker (skip outside CI, fail in CI), shared for this package's tests."""

from __future__ import annotations

import os
from typing import Any

from agentgym.sandbox.config import IMAGE


def docker_problem(need_current_image: bool = False) -> str | None:
    """Why docker sandboxes cannot run here (``None`` when they can)."""
    try:
        from agentgym.sandbox.docker_provider import docker_client
        from agentgym.sandbox.image import image_status

        status = image_status(docker_client(timeout=10), IMAGE)
    except Exception as e:
        return f"Docker is not usable: {e}"
    if status == "missing":
        return f"image {IMAGE} is missing: run `agentgym sandbox build --no-pull`"
    if need_current_image and status == "stale":
        return f"image {IMAGE} predates the current agentgym code: rebuild it"
    return None


def require_docker(need_current_image: bool = False) -> Any:
    """Skip the calling test when Docker is unusable, unless ``CI`` is set: then fail it."""
    import pytest

    problem = docker_problem(need_current_image)
    if problem is None:
        return None
    if os.environ.get("CI"):
        pytest.fail(f"{problem} (Docker tests may not be skipped in CI)")
    pytest.skip(problem)


def started_pool(provider: str, **config: Any) -> Any:
    """A started one-sandbox pool of ``provider`` (``docker`` or ``local``) with ``config``;
    skips the calling test where that provider cannot run (Docker as :func:`require_docker`)."""
    import pytest

    from agentgym.sandbox import SandboxConfig, SandboxPool, get_provider
    from agentgym.sandbox.local import bwrap_works

    if provider == "docker":
        require_docker()
    elif not bwrap_works():
        pytest.skip("bubblewrap is not usable here")
    return SandboxPool(get_provider(provider, SandboxConfig(**config)), size=1).start()
