"""Choosing a provider by name: the built-ins (``docker``, ``local``) and plugins.

Other distributions add providers through the entry-point group ``agentgym.sandboxes``
(``name = "module:ProviderClass"``; the class takes a :class:`SandboxConfig`). A broken plugin
warns and is skipped.
"""

from __future__ import annotations

import importlib
import warnings
from importlib.metadata import entry_points
from typing import Any

from agentgym.sandbox.config import SandboxConfig
from agentgym.sandbox.pool import Provider, SandboxPool

ENTRY_POINT_GROUP = "agentgym.sandboxes"
BUILTIN = {
    "docker": "agentgym.sandbox.docker_provider:DockerProvider",
    "local": "agentgym.sandbox.local:LocalProvider",
}


def _all() -> dict[str, str]:
    found = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.value)
    return found


def provider_names() -> list[str]:
    """Every provider name that :func:`get_provider` accepts."""
    return sorted(_all())


def get_provider(name: str, config: SandboxConfig | None = None, **kwargs: Any) -> Provider:
    """Build the provider called ``name`` (``docker``, ``local`` or a plugin's)."""
    known = _all()
    if name not in known:
        raise ValueError(
            f"unknown sandbox provider {name!r}; use one of {', '.join(sorted(known))}"
        )
    module, _, attr = known[name].partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        if name in BUILTIN:
            raise
        warnings.warn(f"sandbox provider plugin {name!r} failed to load: {e!r}", stacklevel=2)
        raise ValueError(f"sandbox provider {name!r} is installed but broken: {e}") from e
    provider: Provider = cls(config or SandboxConfig(), **kwargs)
    return provider


def open_sandbox(
    provider: str = "docker", config: SandboxConfig | None = None, **kwargs: Any
) -> Any:
    """One fresh sandbox (cold start); closing it destroys it. Pools are faster for many."""
    return get_provider(provider, config, **kwargs).create()


def open_pool(
    provider: str = "docker", size: int = 4, config: SandboxConfig | None = None, **kwargs: Any
) -> SandboxPool:
    """A started warm pool of ``size`` sandboxes of ``provider``."""
    return SandboxPool(get_provider(provider, config, **kwargs), size=size).start()
