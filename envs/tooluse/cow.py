"""Copy-on-write tables: one shared, read-only copy of a domain database per process.

An episode never copies the database. Each :class:`Table` holds the shared base records and the
episode's own copies of the records it touched; resetting drops the own copies (cost: the number
of records changed, not the size of the database). Tools read with :meth:`Table.peek` and take a
private, mutable copy with ``table[key]``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

R = TypeVar("R")


class Table(Generic[R]):
    """A dict-like table whose records are copied from the shared base on first write access."""

    def __init__(self, base: Mapping[str, R], copier: Callable[[R], R]) -> None:
        self._base = base
        self._copier = copier
        self._own: dict[str, R] = {}
        self._new: dict[str, None] = {}
        """Keys not in the (undeleted) base, in insertion order (dict iteration appends them)."""
        self._deleted: set[str] = set()

    # ------------------------------------------------------------------ reads
    def __contains__(self, key: object) -> bool:
        return key in self._own or (key in self._base and key not in self._deleted)

    def peek(self, key: str) -> R:
        """The record for reading only (never mutate it: it may be the shared base)."""
        if key in self._own:
            return self._own[key]
        if key in self._base and key not in self._deleted:
            return self._base[key]
        raise KeyError(key)

    def keys(self) -> Iterator[str]:
        """Keys in dict order: base keys still present, then keys added in this episode."""
        for key in self._base:
            if key not in self._deleted:
                yield key
        yield from self._new

    __iter__ = keys

    def peek_items(self) -> Iterator[tuple[str, R]]:
        """(key, record) pairs for reading only."""
        for key in self.keys():
            yield key, self.peek(key)

    def peek_values(self) -> Iterator[R]:
        """Records for reading only."""
        for key in self.keys():
            yield self.peek(key)

    def __len__(self) -> int:
        return len(self._base) - len(self._deleted) + len(self._new)

    # ------------------------------------------------------------------ writes
    def __getitem__(self, key: str) -> R:
        """The episode's own (mutable) copy of the record, made on first access."""
        if key in self._own:
            return self._own[key]
        if key in self._base and key not in self._deleted:
            record = self._copier(self._base[key])
            self._own[key] = record
            return record
        raise KeyError(key)

    def __setitem__(self, key: str, record: R) -> None:
        if key not in self:
            self._new[key] = None
        self._own[key] = record

    def pop(self, key: str) -> R:
        """Remove a record and return it."""
        record = self[key]
        del self._own[key]
        if key in self._new:
            del self._new[key]
        else:
            self._deleted.add(key)
        return record

    # ------------------------------------------------------------------ episode state
    def reset(self) -> None:
        """Forget every change of the episode (back to the shared base)."""
        self._own.clear()
        self._new.clear()
        self._deleted.clear()

    def touched(self) -> set[str]:
        """Keys whose record may differ from the base (copied, added or deleted)."""
        return set(self._own) | self._deleted

    def __deepcopy__(self, memo: dict[int, Any]) -> Table[R]:
        """Copies the episode's own records only; the base stays shared."""
        clone: Table[R] = Table(self._base, self._copier)
        clone._own = {k: copy.deepcopy(v, memo) for k, v in self._own.items()}
        clone._new = dict(self._new)
        clone._deleted = set(self._deleted)
        return clone


def json_copy(value: Any) -> Any:
    """Deep copy of JSON-like data (dicts, lists, scalars), several times faster than deepcopy."""
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) for v in value]
    return value
