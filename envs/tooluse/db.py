"""A domain database: named copy-on-write tables plus the hashing convention of its benchmark.

Two conventions exist and both are reproduced exactly, so a state can be compared hash for hash
with the original implementations:

- ``tau2`` (tau2-bench): records are pydantic models; the hash is
  ``sha256(json.dumps(db.model_dump(), sort_keys=True, default=str))``.
- ``tau_bench`` (tau-bench v1): records are plain JSON dicts; the hash is
  ``sha256(str(to_hashable(data)))`` where ``to_hashable`` turns dicts into sorted tuples.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from hashlib import sha256
from typing import Any, Literal

from pydantic import BaseModel

from agentgym.envs.tooluse.cow import Table, json_copy

Style = Literal["tau2", "tau_bench"]


def to_hashable(item: Any) -> Any:
    """tau-bench's ``to_hashable``: dicts become tuples of sorted (key, value) pairs."""
    if isinstance(item, dict):
        return tuple((key, to_hashable(value)) for key, value in sorted(item.items()))
    if isinstance(item, list):
        return tuple(to_hashable(element) for element in item)
    if isinstance(item, set):
        return tuple(sorted(to_hashable(element) for element in item))
    return item


def tau_bench_hash(data: Any) -> str:
    """tau-bench's ``consistent_hash(to_hashable(data))``."""
    return sha256(str(to_hashable(data)).encode("utf-8")).hexdigest()


def tau2_hash(data: Any) -> str:
    """tau2-bench's ``get_dict_hash`` (a sorted JSON dump, ``default=str``)."""
    return sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def _dump(record: Any) -> Any:
    return record.model_dump() if isinstance(record, BaseModel) else record


def _model_copy(record: Any) -> Any:
    return record.model_copy(deep=True)


class Database:
    """Named tables over shared base records; ``reset`` returns to the base in O(changes)."""

    def __init__(self, base: Mapping[str, Mapping[str, Any]], style: Style) -> None:
        copier: Callable[[Any], Any] = _model_copy if style == "tau2" else json_copy
        self.style: Style = style
        self.tables: dict[str, Table[Any]] = {
            name: Table(records, copier) for name, records in base.items()
        }

    def __getitem__(self, name: str) -> Table[Any]:
        return self.tables[name]

    def reset(self) -> None:
        """Drop every change made since the base."""
        for table in self.tables.values():
            table.reset()

    def export(self) -> dict[str, dict[str, Any]]:
        """The whole database as JSON data in the original benchmark's schema (fresh dicts)."""
        return {
            name: {key: json_copy(_dump(rec)) for key, rec in table.peek_items()}
            for name, table in self.tables.items()
        }

    def hash(self) -> str:
        """The hash the original benchmark computes for this state."""
        data = self.export()
        return tau2_hash(data) if self.style == "tau2" else tau_bench_hash(data)

    def record_key(self, record: Any) -> str:
        """Canonical text of one record under this database's hashing convention."""
        if self.style == "tau2":
            return json.dumps(_dump(record), sort_keys=True, default=str)
        return str(to_hashable(record))

    def diff(self, other: Database) -> list[tuple[str, str]]:
        """(table, key) pairs whose records differ; empty iff the two hashes are equal.

        Only records touched in either episode can differ, so this costs O(changes), not a dump of
        the whole database (both sides share one base).
        """
        differing = []
        for name, table in self.tables.items():
            theirs = other.tables[name]
            for key in sorted(table.touched() | theirs.touched()):
                mine_has, theirs_has = key in table, key in theirs
                if mine_has != theirs_has or (
                    mine_has
                    and self.record_key(table.peek(key)) != self.record_key(theirs.peek(key))
                ):
                    differing.append((name, key))
        return differing


class ModelDatabase:
    """A database held as one pydantic model (tau2 telecom: record lists, a phone's state).

    The base model is shared by every episode; the first access to :attr:`data` takes the
    episode's own copy (these databases are a few kilobytes; the copy is validated from the base's
    JSON, 7x faster than pydantic's deep copy), ``reset`` drops it. The hash is tau2's
    ``get_dict_hash(db.model_dump())``.
    """

    style: Style = "tau2"

    def __init__(self, base: BaseModel, base_json: str | None = None) -> None:
        self._base = base
        self._base_json = base_json if base_json is not None else base.model_dump_json()
        self._own: BaseModel | None = None

    @property
    def data(self) -> Any:
        """The episode's own, mutable model (copied from the base on first access)."""
        if self._own is None:
            self._own = type(self._base).model_validate_json(self._base_json)
        return self._own

    @data.setter
    def data(self, model: BaseModel) -> None:
        self._own = model

    def peek(self) -> Any:
        """The model for reading only."""
        return self._own if self._own is not None else self._base

    def reset(self) -> None:
        """Back to the base model."""
        self._own = None

    def export(self) -> dict[str, Any]:
        """The database as JSON data in tau2's schema."""
        return dict(self.peek().model_dump(mode="json"))

    def hash(self) -> str:
        """tau2's hash of this state."""
        return tau2_hash(self.peek().model_dump())

    def diff(self, other: ModelDatabase) -> list[tuple[str, str]]:
        """``[("*", "*")]`` when the two states hash differently, else ``[]``."""
        if self._own is None and other._own is None and self._base is other._base:
            return []
        return [] if self.hash() == other.hash() else [("*", "*")]

    def __deepcopy__(self, memo: dict[int, Any]) -> ModelDatabase:
        """Copies the episode's own model only; the base stays shared."""
        clone = ModelDatabase(self._base, self._base_json)
        if self._own is not None:
            clone._own = type(self._own).model_validate_json(self._own.model_dump_json())
        return clone
