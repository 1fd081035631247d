"""A name -> factory registry that falls back to an entry-point group, for the trainer's plug-ins
(credit functions, routed policies): built-ins register on import, methods shipped outside the
trainer are found through their package's entry points without importing them up front."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Generic, TypeVar

T = TypeVar("T")


class NamedRegistry(Generic[T]):
    """``register(name, item)``; ``get(name)`` imports the built-ins, then the entry point."""

    def __init__(self, what: str, group: str, builtins: Callable[[], None] = lambda: None) -> None:
        self.what, self.group, self.builtins = what, group, builtins
        self.items: dict[str, T] = {}

    def register(self, name: str, item: T) -> T:
        self.items[name] = item
        return item

    def get(self, name: str) -> T:
        if name not in self.items:
            self.builtins()
        if name not in self.items:
            for ep in entry_points(group=self.group, name=name):
                self.register(name, ep.load())
        if name not in self.items:
            raise KeyError(f"unknown {self.what} {name!r}; registered: {self.names()}")
        return self.items[name]

    def names(self) -> list[str]:
        """Every name ``get`` accepts: the built-ins, those registered since, the entry points."""
        self.builtins()
        return sorted({*self.items, *(ep.name for ep in entry_points(group=self.group))})
