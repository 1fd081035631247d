"""Choosing a provider by name: the built-ins (``docker``, ``local``) and plugins.

Other distributions add providers through the entry-point group ``agentgym.sandboxes``
(``name = "module:ProviderClass"``; the class takes a :class:`SandboxConfig`), or in-process with
:func:`register_provider`. A broken plugin warns and is a ``ValueError`` naming it.

Every provider is also an ``isolate=NAME`` of the core (:data:`agentgym.registry.ISOLATION`):
:func:`register_isolation`, the ``agentgym.isolation`` entry point, registers them all, and
:func:`register_provider` each new one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentgym.plugins import Registry, load_ref
from agentgym.registry import ISOLATION
from agentgym.sandbox.config import SandboxConfig
from agentgym.sandbox.pool import Provider, SandboxPool

ENTRY_POINT_GROUP = "agentgym.sandboxes"
PROVIDERS: Registry[Callable[..., Provider]] = Registry("sandbox provider", ENTRY_POINT_GROUP)
"""Provider classes by name: the built-ins below, ``register_provider``, and the plug-ins."""
PROVIDERS.register("docker", "agentgym.sandbox.docker_provider:DockerProvider")
PROVIDERS.register("local", "agentgym.sandbox.local:LocalProvider")
ISOLATED_ENV = "agentgym.sandbox.isolated_env:IsolatedEnv"
"""What ``isolate=NAME`` builds: any env in a sandbox of provider NAME."""


def register_provider(name: str, provider: Callable[..., Provider] | str) -> None:
    """Make ``provider`` (a class taking a :class:`SandboxConfig`, or its ``"module:Class"``)
    available as ``name``: to ``get_provider``, ``open_pool`` and ``--isolate``."""
    PROVIDERS.register(name, provider)
    ISOLATION.register(name, isolated(name))


def isolated(provider: str) -> Callable[[str, dict[str, Any]], Any]:
    """The core's ``isolate=provider``: the env built as an :class:`IsolatedEnv` in ``provider``."""

    def make(env_id: str, env_kwargs: dict[str, Any]) -> Any:
        isolated_env: Any = load_ref(ISOLATED_ENV)  # by name: that module builds on this one
        return isolated_env(env_id, provider=provider, env_kwargs=env_kwargs)

    return make


def register_isolation() -> None:
    """Make every provider an ``isolate=NAME`` of the core (the ``agentgym.isolation`` entry
    point, run when the core first isolates an env)."""
    for name in provider_names():
        ISOLATION.register(name, isolated(name))


def provider_names() -> list[str]:
    """Every provider name that :func:`get_provider` accepts."""
    return PROVIDERS.names()


def get_provider(name: str, config: SandboxConfig | None = None, **kwargs: Any) -> Provider:
    """Build the provider called ``name`` (``docker``, ``local`` or a plugin's)."""
    cls = PROVIDERS.find(name)
    if cls is None:
        raise ValueError(
            f"unknown sandbox provider {name!r}; use one of {', '.join(provider_names())}"
        )
    return cls(config or SandboxConfig(), **kwargs)


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
