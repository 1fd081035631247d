"""A KB as integer-id arrays in numpy: the executor's fast path (:class:`Graph`, :class:`NodeSet`).

Nodes get dense ids in display order (label, then id), so a sorted id array already lists its nodes
the way observations show them. Each relation keeps CSR adjacency both ways (``ptr`` + ``idx``, rows
sorted and de-duplicated) and, if it has numeric values, those values sorted for range queries plus
each node's largest and smallest value. A working set is a :class:`NodeSet`: a sorted unique id
array that behaves as a read-only set of string ids, turned into strings only when it is shown,
answered or compared with a plain set. Every query answers exactly what the SQL of ``SQLiteKB`` does.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Set
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from agentgym.envs.kbqa.kb import CompareOp

Index = npt.NDArray[np.intp]
"""Sorted, unique node numbers."""
_T = TypeVar("_T")
VALUE_FIELDS = ("keys", "heads", "ptr", "by_head", "top", "bottom")


def by_label(ids: Iterable[str], label: Callable[[str], str], limit: int | None) -> list[str]:
    """Ids sorted by label then id (the first ``limit`` of them, cheaply): the display order."""
    key = lambda n: (label(n), n)  # noqa: E731
    return sorted(ids, key=key) if limit is None else heapq.nsmallest(limit, ids, key=key)


class NodeSet(Set[str]):
    """An immutable set of node ids held as sorted node numbers of one :class:`Graph`."""

    __slots__ = ("graph", "index")

    def __init__(self, graph: Graph, index: Index) -> None:
        self.graph = graph
        self.index = index

    def __len__(self) -> int:
        return len(self.index)

    def __iter__(self) -> Iterator[str]:
        return iter(self.graph.ids[self.index].tolist())

    def __contains__(self, node: object) -> bool:
        k = self.graph.number.get(node) if isinstance(node, str) else None
        if k is None:
            return False
        at = int(np.searchsorted(self.index, k))
        return at < len(self.index) and int(self.index[at]) == k

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NodeSet) and other.graph is self.graph:
            return bool(np.array_equal(self.index, other.index))
        return Set.__eq__(self, other)

    def __hash__(self) -> int:
        return self._hash()  # frozenset's hash, so equal sets hash alike

    def __and__(self, other: Iterable[Any]) -> Set[str]:
        if isinstance(other, NodeSet) and other.graph is self.graph:
            return self.graph.intersect(self, other)
        return frozenset(n for n in other if n in self)

    __rand__ = __and__

    @classmethod
    def _from_iterable(cls, it: Iterable[_T]) -> frozenset[_T]:
        return frozenset(it)  # the mixin's |, -, ^ give plain frozensets

    def __copy__(self) -> NodeSet:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> NodeSet:
        return self  # immutable; copying would copy the whole graph

    def __reduce__(self) -> tuple[Any, ...]:
        return (frozenset, (tuple(self),))  # pickles as the plain set it stands for

    def __repr__(self) -> str:
        return f"NodeSet({len(self)} nodes)"


@dataclass(frozen=True)
class _Adjacency:
    """CSR adjacency of one relation in one direction: neighbours of ``k`` are ``idx[ptr[k]:ptr[k+1]]``."""

    ptr: Index
    idx: Index


@dataclass(frozen=True)
class _Values:
    """Numeric values of one relation: sorted with their heads, and per head (all, max, min)."""

    keys: npt.NDArray[np.float64]
    heads: Index
    ptr: Index
    """Values of head ``k`` are ``by_head[ptr[k]:ptr[k+1]]``, ascending (repeats kept, as in SQL)."""
    by_head: npt.NDArray[np.float64]
    top: npt.NDArray[np.float64]
    bottom: npt.NDArray[np.float64]
    """Largest / smallest value per node; NaN where the node has none."""


Arrays = dict[str, npt.NDArray[Any]]
"""A graph's arrays by name (see :mod:`agentgym.envs.kbqa.graphfile` for the names)."""


def unique(array: Index) -> Index:
    """Sorted unique values (``np.unique`` without its overhead, which is large in numpy 2)."""
    ordered = np.sort(array)
    keep = np.empty(len(ordered), dtype=bool)
    keep[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def encode(texts: list[str]) -> np.ndarray[Any, Any]:
    """Strings as one UTF-8 byte array, each ended by a NUL (compact; loads without pickle)."""
    if any("\0" in t for t in texts):
        raise ValueError("KB names and ids must not contain NUL characters")
    return np.frombuffer("".join(t + "\0" for t in texts).encode("utf-8"), dtype=np.uint8)


def decode(array: np.ndarray[Any, Any]) -> list[str]:
    """The strings of :func:`encode`."""
    return array.tobytes().decode("utf-8").split("\0")[:-1]


class Graph:
    """Every node, relation, value and type of a KB as arrays; answers the executor's set queries.

    Queries take any set of string ids (a ``NodeSet`` of this graph costs nothing; other ids are
    looked up, and ids that are not nodes are ignored, as SQL does).
    """

    def __init__(self, arrays: Arrays) -> None:
        for array in arrays.values():
            array.setflags(write=False)  # NodeSets share slices of these arrays
        ids = decode(arrays["ids"])
        self.size = len(ids)
        self.ids = np.array(ids, dtype=object)
        self.number = dict(zip(ids, range(self.size), strict=True))
        self.names = dict(zip(ids, decode(arrays["names"]), strict=True))
        self._kinds = decode(arrays["kinds"])
        self.empty = NodeSet(self, arrays["empty"])
        self._numbers = np.arange(self.size, dtype=np.intp)  # singletons are slices of this
        self._numbers.setflags(write=False)
        relations = decode(arrays["relations"])
        self.out = {
            r: _Adjacency(arrays[f"out:{r}:ptr"], arrays[f"out:{r}:idx"]) for r in relations
        }
        self.inc = {
            r: _Adjacency(arrays[f"inc:{r}:ptr"], arrays[f"inc:{r}:idx"]) for r in relations
        }
        self.values = {
            r: _Values(*(arrays[f"val:{r}:{f}"] for f in VALUE_FIELDS))
            for r in decode(arrays["numeric"])
        }
        self.type_masks = dict(zip(decode(arrays["types"]), arrays["type_masks"], strict=True))
        columns = {r: a for r, a in self.out.items()} | {f"~{r}": a for r, a in self.inc.items()}
        self.incident_names = sorted(columns)
        self.incidence = np.stack(
            [np.diff(columns[c].ptr) > 0 for c in self.incident_names]
            or [np.zeros(self.size, dtype=bool)],
            axis=1,
        )

    @functools.cached_property
    def by_name(self) -> dict[str, list[str]]:
        """Name -> ids of the nodes so named, entities first, then by id (built on first use)."""
        found: dict[str, list[str]] = {}
        rows = zip(self._kinds, self.ids.tolist(), strict=True)
        for _, node in sorted(rows):
            found.setdefault(self.names[node], []).append(node)
        return found

    # ------------------------------------------------------------------ sets
    def lift(self, ids: Iterable[str]) -> NodeSet:
        """``ids`` as a NodeSet of this graph (ids that are not nodes are dropped)."""
        if isinstance(ids, NodeSet) and ids.graph is self:
            return ids
        if isinstance(ids, (tuple, list)) and len(ids) == 1:  # one entity id: the common case
            k = self.number.get(ids[0])
            return self.empty if k is None else NodeSet(self, self._numbers[k : k + 1])
        found = {k for k in map(self.number.get, ids) if k is not None}
        return NodeSet(self, np.array(sorted(found), dtype=np.intp))

    def _own(self, nodes: Iterable[str]) -> Index:
        return self.lift(nodes).index

    def _set(self, found: Index) -> NodeSet:
        """A NodeSet of unsorted node numbers with repeats."""
        if len(found) * 16 < self.size:  # sorting beats a mask over every node
            return NodeSet(self, unique(found))
        mask = np.zeros(self.size, dtype=bool)
        mask[found] = True
        return NodeSet(self, np.flatnonzero(mask))

    def intersect(self, first: Set[str], second: Set[str]) -> Set[str]:
        """``first & second``; plain sets of non-nodes (counts) intersect as plain sets."""
        if not any(isinstance(s, NodeSet) and s.graph is self for s in (first, second)):
            return frozenset(first) & frozenset(second)
        small, large = sorted((self._own(first), self._own(second)), key=len)
        if len(small) * 16 < len(large):
            at = np.searchsorted(large, small).clip(max=len(large) - 1)  # large is not empty
            return NodeSet(self, small[large[at] == small])
        mask = np.zeros(self.size, dtype=bool)
        mask[large] = True
        return NodeSet(self, small[mask[small]])

    def ordered(self, nodes: Set[str], limit: int | None = None) -> list[str]:
        """Ids in display order (label, then id), the first ``limit`` of them."""
        if isinstance(nodes, NodeSet) and nodes.graph is self:
            index = nodes.index if limit is None else nodes.index[:limit]
            return list(self.ids[index].tolist())
        return by_label(nodes, self.label, limit)

    def label(self, node: str) -> str:
        """Display name of a node; the id itself if unknown."""
        return self.names.get(node, node)

    # ------------------------------------------------------------------ queries
    def follow(self, nodes: Set[str], relation: str, reverse: bool) -> NodeSet:
        """Tails of ``relation`` from ``nodes`` (heads, when ``reverse``)."""
        adjacency = (self.inc if reverse else self.out).get(relation)
        src = self._own(nodes)
        if adjacency is None or not len(src):
            return self.empty
        ptr, idx = adjacency.ptr, adjacency.idx
        if len(src) == 1:  # a row is already sorted and unique
            return NodeSet(self, idx[ptr[src[0]] : ptr[src[0] + 1]])
        if len(src) <= 32:  # a few rows: slicing beats the vectorised gather's fixed cost
            bounds = ptr[src].tolist(), ptr[src + 1].tolist()
            return self._set(np.concatenate([idx[a:b] for a, b in zip(*bounds, strict=True)]))
        starts = ptr[src]
        lengths = ptr[src + 1] - starts
        total = int(lengths.sum())
        if not total:
            return self.empty
        ends = np.cumsum(lengths)
        positions = np.arange(total) + np.repeat(starts - (ends - lengths), lengths)
        return self._set(idx[positions])

    def incident(self, nodes: Set[str]) -> dict[str, int]:
        """``relation`` / ``~relation`` -> how many of ``nodes`` have it (only those they have)."""
        counts = np.count_nonzero(self.incidence[self._own(nodes)], axis=0)
        return {c: int(n) for c, n in zip(self.incident_names, counts.tolist(), strict=True) if n}

    def with_type(self, nodes: Set[str], type_: str) -> NodeSet:
        """The ``nodes`` of type ``type_``."""
        mask = self.type_masks.get(type_)
        src = self._own(nodes)
        return self.empty if mask is None else NodeSet(self, src[mask[src]])

    def of_type(self, type_: str) -> NodeSet:
        """Every node of type ``type_``."""
        mask = self.type_masks.get(type_)
        return self.empty if mask is None else NodeSet(self, np.flatnonzero(mask))

    def values_of(self, nodes: Set[str], relation: str) -> dict[str, list[float]]:
        """Numeric values of ``relation`` (ascending) for each of ``nodes`` that has any."""
        values = self.values.get(relation)
        if values is None:
            return {}
        found = {}
        for k in self._own(nodes).tolist():
            row = values.by_head[values.ptr[k] : values.ptr[k + 1]]
            if len(row):
                found[str(self.ids[k])] = row.tolist()
        return found

    def extreme(self, nodes: Set[str], relation: str, largest: bool) -> NodeSet:
        """The ``nodes`` whose largest (smallest) value is the largest (smallest); ties kept."""
        values = self.values.get(relation)
        if values is None:
            return self.empty
        src = self._own(nodes)
        own = (values.top if largest else values.bottom)[src]
        have = ~np.isnan(own)
        if not have.any():
            return self.empty
        target = own[have].max() if largest else own[have].min()
        return NodeSet(self, src[own == target])

    def compare(self, relation: str, op: CompareOp, value: float) -> NodeSet:
        """Heads with some value ``v`` of ``relation`` such that ``v op value``."""
        values = self.values.get(relation)
        if values is None or math.isnan(value):  # SQLite binds NaN as NULL: nothing compares
            return self.empty
        left = int(np.searchsorted(values.keys, value, side="left"))
        right = int(np.searchsorted(values.keys, value, side="right"))
        spans = {
            "lt": [(0, left)],
            "le": [(0, right)],
            "gt": [(right, len(values.keys))],
            "ge": [(left, len(values.keys))],
            "eq": [(left, right)],
            "ne": [(0, left), (right, len(values.keys))],
        }[op]
        return self._set(np.concatenate([values.heads[a:b] for a, b in spans]))

    def between(self, relation: str, low: float, high: float) -> NodeSet:
        """Heads with some value of ``relation`` in ``[low, high]``."""
        values = self.values.get(relation)
        if values is None or math.isnan(low) or math.isnan(high):
            return self.empty
        a = int(np.searchsorted(values.keys, low, side="left"))
        b = int(np.searchsorted(values.keys, high, side="right"))
        return self._set(values.heads[a:b]) if a < b else self.empty
