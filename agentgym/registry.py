"""Environment registry: ``register``, ``make``, ``list_envs``.

Every agentgym env is registered twice: here (with its docs-facing metadata) and in Gymnasium's
registry, so ``gymnasium.make("agentgym/Clarify-v0")`` works after ``import agentgym``. Envs of other
distributions register through the entry-point group ``agentgym.envs``; a broken plugin warns and is
skipped, it never breaks the import.

``isolate=NAME`` builds the env through :data:`ISOLATION`, which a sandbox plug-in fills (this
distribution's ``sandbox/`` through the entry-point group ``agentgym.isolation``): the core names
no sandbox module.

An env id ``SCHEME:REST`` whose scheme is registered (``openenv:http://HOST:PORT``, any OpenEnv
server) is resolved by the scheme's function on first use, not registered ahead.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium

from agentgym.plugins import Registry, load_ref

ENTRY_POINT_GROUP = "agentgym.envs"
NAMESPACE = "agentgym"

Isolator = Callable[[str, dict[str, Any]], Any]
"""``(env id, env kwargs) -> env``: the env built in a sandbox, behind a proxy with its API."""
ISOLATION: Registry[Isolator] = Registry("isolation", "agentgym.isolation", registrars=True)
"""``isolate=NAME`` by name; each ``agentgym.isolation`` entry point is a function that registers
its names (the sandbox registers one per sandbox provider: ``docker``, ``local``, plug-ins)."""


@dataclass(frozen=True)
class EnvSpec:
    """How to build one registered env."""

    id: str
    """Full id, ``agentgym/<Name>-v<N>``."""
    entry_point: str
    """``module:Class`` of the env."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Default constructor arguments."""
    description: str = ""
    """One line for ``agentgym envs``."""
    target: type[Any] | None = None
    """The env class itself, for a spec an env id scheme built (``openenv:URL``): a class made
    for that id, not importable by ``entry_point``."""

    def load(self) -> type[Any]:
        """Import and return the env class."""
        if self.target is not None:
            return self.target
        return load_ref(self.entry_point)  # type: ignore[return-value]

    def make(self, isolate: str | None = None, **kwargs: Any) -> Any:
        """Build the env, ``isolate`` and ``kwargs`` already checked (:func:`make` checks them;
        an evaluation checks them once for all its episodes)."""
        if self.target is not None:
            if isolate is not None:
                raise ValueError(
                    f"{self.id} runs on its own server: isolate it there "
                    "(agentgym env serve --isolate), not here"
                )
            env = self.target(**{**self.kwargs, **kwargs})
            env.spec = self
            return env
        if isolate is not None:
            env = ISOLATION.get(isolate)(self.id, {**self.kwargs, **kwargs})
        else:
            env = self.load()(**{**self.kwargs, **kwargs})
        env.spec = gymnasium.spec(self.id)
        return env


ENVS: Registry[EnvSpec] = Registry("env", ENTRY_POINT_GROUP, registrars=True)
"""Every env id's spec; each ``agentgym.envs`` entry point is a function that calls ``register``."""

SCHEME_GROUP = "agentgym.env_schemes"
SCHEMES: Registry[Callable[[str], EnvSpec]] = Registry("env id scheme", SCHEME_GROUP)
"""Env ids of the form ``SCHEME:REST`` (``openenv:http://HOST:PORT``): the scheme's function
builds the id's spec when the id is first asked for (other distributions add schemes through the
entry-point group ``agentgym.env_schemes``)."""
SCHEMES.register("openenv", "agentgym.integrations.openenv.client:remote_spec")
_RESOLVED: dict[str, EnvSpec] = {}  # scheme ids already resolved in this process


def _full_id(env_id: str) -> str:
    return env_id if "/" in env_id else f"{NAMESPACE}/{env_id}"


def register(
    id: str, entry_point: str, kwargs: dict[str, Any] | None = None, description: str = ""
) -> EnvSpec:
    """Register an env under ``agentgym/<Name>-v<N>`` (the namespace is added if missing)."""
    spec = EnvSpec(_full_id(id), entry_point, dict(kwargs or {}), description)
    ENVS.register(spec.id, spec)
    if spec.id not in gymnasium.registry:
        gymnasium.register(id=spec.id, entry_point=entry_point, kwargs=spec.kwargs)
    return spec


def load_plugins() -> None:
    """Run every ``agentgym.envs`` entry point once (each is a function that calls ``register``)."""
    ENVS.load()


def list_envs() -> list[EnvSpec]:
    """All registered env specs, sorted by id."""
    return [ENVS.get(k) for k in ENVS.names()]


def spec(env_id: str) -> EnvSpec:
    """The spec of ``env_id``; an unknown id raises ``KeyError`` with close matches."""
    if env_id in _RESOLVED:
        return _RESOLVED[env_id]
    if (scheme := scheme_of(env_id)) is not None:
        _RESOLVED[env_id] = SCHEMES.get(scheme)(env_id)
        return _RESOLVED[env_id]
    full = _full_id(env_id)
    found = ENVS.find(full)
    if found is not None:
        return found
    known = ENVS.names()
    fix = "see the plug-in warnings above"
    if not known:
        raise KeyError(f"no environment {env_id!r}: no env is registered ({fix})")
    close = difflib.get_close_matches(full, known, n=3, cutoff=0.5)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    broken = (
        f" (env plug-ins failed to load: {', '.join(ENVS.failed)}; {fix})" if ENVS.failed else ""
    )
    raise KeyError(f"no environment {env_id!r}.{hint} Registered: {', '.join(known)}{broken}")


def scheme_of(env_id: str) -> str | None:
    """The scheme of a ``SCHEME:REST`` env id (a registered scheme only), else None."""
    scheme, sep, _ = env_id.partition(":")
    if not sep or "/" in scheme or scheme not in SCHEMES.names():
        return None
    return scheme


def check_isolate(isolate: str | None) -> None:
    """A ``ValueError`` unless ``isolate`` is None or a name in :data:`ISOLATION` (a sandbox
    provider's, built in or a plug-in)."""
    if isolate is None:
        return
    if isolate not in (names := ISOLATION.names()):
        allowed = f"use one of {', '.join(names)}" if names else "no sandbox plug-in is installed"
        raise ValueError(f"isolate={isolate!r}: {allowed}")


def check_nesting(env_ids: list[str], isolate: str | None) -> None:
    """Refuse ``isolate`` for envs that sandbox their own commands (sandboxes do not nest: no
    bubblewrap inside a container, no Docker inside bubblewrap)."""
    if isolate is None:
        return
    remote = [i for i in env_ids if spec(i).target is not None]
    if remote:
        raise ValueError(
            f"{', '.join(remote)} {'runs' if len(remote) == 1 else 'run'} on a server of its own: "
            "drop --isolate here (isolate it on the server: agentgym env serve --isolate)"
        )
    nested = [i for i in env_ids if getattr(spec(i).load(), "own_sandbox", False)]
    if nested:
        raise ValueError(
            f"{', '.join(nested)} {'runs' if len(nested) == 1 else 'run'} its commands in a "
            f"sandbox of its own, which cannot start inside an isolate={isolate} sandbox; drop "
            "--isolate (choose the env's own sandbox with --env-option sandbox=docker|local)"
        )


def make(env_id: str, isolate: str | None = None, **kwargs: Any) -> Any:
    """Build the env registered as ``env_id`` (with or without the ``agentgym/`` prefix).

    ``isolate="docker"`` or ``"local"`` runs the env inside a sandbox behind a proxy with the same
    API (one generic worker protocol for every env), for untrusted envs and long runs.
    """
    s = spec(env_id)
    check_isolate(isolate)
    check_nesting([env_id], isolate)
    return s.make(isolate, **kwargs)
