"""One registry type for every plug-in group: envs, agents, sandbox providers, algorithms, credit
functions and trainer policies (``model.policy``).

A :class:`Registry` maps names to items of one kind. Items arrive three ways: ``register`` (the
built-ins, one line each, with the item itself or a ``"module:attr"`` reference that is imported on
first use, so registering imports nothing), a ``builtins`` hook run before the first lookup, and
the registry's entry-point group, for this and other distributions (read once, at the first
lookup, like the hook). A plug-in that fails to load warns, as
in Gymnasium and Inspect: a broken registrar is skipped, a broken item is a ``ValueError`` when
asked for by name; neither breaks the import of agentgym.
"""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar, overload

T = TypeVar("T")


def load_ref(ref: str) -> object:
    """The object a ``"module:attr"`` reference names (``module.sub:Class.attr`` too)."""
    module, _, attr = ref.partition(":")
    obj: object = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """Names to items of one kind, from ``register``, a ``builtins`` hook and an entry-point group.

    ``registrars=True``: each entry point of the group is a function that registers items itself
    (one env plug-in registers many ids), and all of them run before the first lookup. Otherwise
    an entry point's name is the item's name and it loads when that name is first asked for.
    """

    def __init__(
        self,
        what: str,
        group: str,
        builtins: Callable[[], None] = lambda: None,
        *,
        registrars: bool = False,
    ) -> None:
        self.what, self.group, self.builtins, self.registrars = what, group, builtins, registrars
        self.items: dict[str, T | str] = {}
        self.entry_points: list[EntryPoint] = []
        """The group's entry points, read once by :meth:`load`."""
        self.loaded = False
        self.failed: list[str] = []
        """The names of the entry points that failed to load (each warned why)."""
        self._loading = False
        self._lock = threading.RLock()

    @overload
    def register(self, name: str, item: T) -> T: ...
    @overload
    def register(self, name: str, item: str) -> str: ...
    def register(self, name: str, item: T | str) -> T | str:
        """Make ``item`` (or the ``"module:attr"`` it names) available as ``name``."""
        self.items[name] = item
        return item

    def find(self, name: str) -> T | None:
        """The item called ``name``, or None; a reference is imported here, once."""
        self.load()
        if name not in self.items and not self.registrars:
            ep = next((e for e in self.entry_points if e.name == name), None)
            if ep is not None:
                try:
                    self.items[name] = ep.load()
                except Exception as e:  # listed by names(), so say it is there but broken
                    self._warn(ep, e)
                    raise ValueError(f"{self.what} {name!r} is installed but broken: {e}") from e
        item = self.items.get(name)
        if isinstance(item, str):
            item = self.items[name] = load_ref(item)  # type: ignore[assignment]
        return item  # type: ignore[return-value]

    def get(self, name: str) -> T:
        """The item called ``name``; a ``KeyError`` naming the registered ones otherwise."""
        item = self.find(name)
        if item is None:
            raise KeyError(f"unknown {self.what} {name!r}; registered: {self.names()}")
        return item

    def names(self) -> list[str]:
        """Every name ``get`` accepts, without importing any item."""
        self.load()
        if self.registrars:
            return sorted(self.items)
        return sorted({*self.items, *(ep.name for ep in self.entry_points)})

    def load(self) -> None:
        """Run the built-ins hook and read the group's entry points, once; a registrars group
        runs each of them here. Another thread waits until it is done (the first lookups may come
        from an evaluation's worker threads); a hook's own lookups see what is there so far."""
        if self.loaded:
            return
        with self._lock:
            if self.loaded or self._loading:
                return
            self._loading = True
            try:
                self.builtins()
                self.entry_points = list(entry_points(group=self.group))
                if self.registrars:
                    for ep in self.entry_points:
                        self._run_registrar(ep)
            finally:
                self._loading = False
            self.loaded = True

    def _run_registrar(self, ep: EntryPoint) -> None:
        try:
            ep.load()()
        except Exception as e:  # a broken third-party plug-in must not break agentgym
            self._warn(ep, e)

    def _warn(self, ep: EntryPoint, error: Exception) -> None:
        self.failed.append(ep.name)
        warnings.warn(
            f"agentgym {self.what} plugin {ep.name!r} ({ep.value}) failed to load: {error!r}",
            stacklevel=4,
        )
