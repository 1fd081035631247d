"""The knowledge-base interface the executor runs on, and its SQLite implementations.

:class:`KnowledgeBase` is the small contract another KB (a Freebase subset) implements to plug in:
string ids in, frozensets out. :class:`SQLiteKB` answers every call with SQL against the built file;
:class:`CachedKB` answers the same calls from a :class:`~agentgym.envs.kbqa.graph.Graph` of numpy
arrays loaded from that file on first use. The executor works on :class:`NodeSets`: a KB's own set
representation (:func:`node_sets`): the graph's integer arrays for ``CachedKB``, plain frozensets
for any other KB. Results are identical either way; tests check.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
from collections import defaultdict
from collections.abc import Iterable, Set
from pathlib import Path
from typing import Any, Literal, Protocol

from agentgym.envs.kbqa.build import METAQA, ensure_built, metaqa_source
from agentgym.envs.kbqa.graph import Graph, by_label
from agentgym.envs.kbqa.graphfile import load_graph

CompareOp = Literal["lt", "le", "gt", "ge", "eq", "ne"]
COMPARE_OPS: tuple[CompareOp, ...] = ("lt", "le", "gt", "ge", "eq", "ne")


class KnowledgeBase(Protocol):
    """What the action executor needs from a KB. Ids are strings; results are frozensets."""

    name: str

    def label(self, node: str) -> str:
        """Display name of a node (a literal's text); the id itself if unknown."""

    def is_node(self, node: str) -> bool:
        """Whether ``node`` is an entity id or literal in the KB."""

    def find(self, name: str) -> list[str]:
        """Ids of the nodes named exactly ``name`` (entities first)."""

    def relation_names(self) -> list[str]:
        """Every relation, sorted."""

    def type_names(self) -> list[str]:
        """Every entity/literal type, sorted."""

    def follow(self, nodes: Iterable[str], relation: str, reverse: bool) -> frozenset[str]:
        """Tails of ``relation`` from ``nodes`` (heads, when ``reverse``)."""

    def incident(self, nodes: Iterable[str]) -> dict[str, int]:
        """``relation`` (outgoing) / ``~relation`` (incoming) -> how many of ``nodes`` have it."""

    def with_type(self, nodes: Iterable[str], type_: str) -> frozenset[str]:
        """The ``nodes`` that have type ``type_``."""

    def of_type(self, type_: str) -> frozenset[str]:
        """Every node of type ``type_``."""

    def values(self, nodes: Iterable[str], relation: str) -> dict[str, list[float]]:
        """Numeric values of ``relation`` for each of ``nodes`` that has any."""

    def extreme(self, nodes: Iterable[str], relation: str, largest: bool) -> frozenset[str]:
        """The ``nodes`` whose largest (smallest) ``relation`` value is the largest (smallest); ties kept."""

    def compare(self, relation: str, op: CompareOp, value: float) -> frozenset[str]:
        """Heads with some numeric value ``v`` of ``relation`` such that ``v op value``."""

    def between(self, relation: str, low: float, high: float) -> frozenset[str]:
        """Heads with some numeric value of ``relation`` in ``[low, high]``."""

    def numeric_relations(self) -> list[str]:
        """Relations that have numeric values (the ones Order/Compare/Time_constraint use)."""


class NodeSets(Protocol):
    """The executor's set operations on a KB's own representation of a set of ids."""

    def lift(self, ids: Iterable[str]) -> Set[str]:
        """``ids`` as this KB's set (ids that are not nodes may be dropped)."""

    def follow(self, nodes: Set[str], relation: str, reverse: bool) -> Set[str]: ...

    def incident(self, nodes: Set[str]) -> dict[str, int]: ...

    def with_type(self, nodes: Set[str], type_: str) -> Set[str]: ...

    def intersect(self, first: Set[str], second: Set[str]) -> Set[str]: ...

    def extreme(self, nodes: Set[str], relation: str, largest: bool) -> Set[str]: ...

    def compare(self, relation: str, op: CompareOp, value: float) -> Set[str]: ...

    def between(self, relation: str, low: float, high: float) -> Set[str]: ...

    def ordered(self, nodes: Set[str], limit: int | None = None) -> list[str]:
        """Ids sorted by label then id (the first ``limit`` of them)."""


class FrozenSets:
    """:class:`NodeSets` of any :class:`KnowledgeBase`: its own calls, on frozensets."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb

    def lift(self, ids: Iterable[str]) -> frozenset[str]:
        return frozenset(ids)

    def follow(self, nodes: Set[str], relation: str, reverse: bool) -> frozenset[str]:
        return self.kb.follow(nodes, relation, reverse)

    def incident(self, nodes: Set[str]) -> dict[str, int]:
        return self.kb.incident(nodes)

    def with_type(self, nodes: Set[str], type_: str) -> frozenset[str]:
        return self.kb.with_type(nodes, type_)

    def intersect(self, first: Set[str], second: Set[str]) -> frozenset[str]:
        return frozenset(first) & frozenset(second)

    def extreme(self, nodes: Set[str], relation: str, largest: bool) -> frozenset[str]:
        return self.kb.extreme(nodes, relation, largest)

    def compare(self, relation: str, op: CompareOp, value: float) -> frozenset[str]:
        return self.kb.compare(relation, op, value)

    def between(self, relation: str, low: float, high: float) -> frozenset[str]:
        return self.kb.between(relation, low, high)

    def ordered(self, nodes: Set[str], limit: int | None = None) -> list[str]:
        return by_label(nodes, self.kb.label, limit)


def node_sets(kb: KnowledgeBase) -> NodeSets:
    """The KB's own set operations if it offers them (``kb.node_sets()``), else :class:`FrozenSets`."""
    own = getattr(kb, "node_sets", None)
    return own() if callable(own) else FrozenSets(kb)  # type: ignore[no-any-return]


_SQL_OPS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "=", "ne": "!="}


class SQLiteKB:
    """A built KB file, queried with SQL on every call (thread-safe, read-only)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        self._lock = threading.Lock()
        meta = dict(self._rows("SELECT key, value FROM meta"))
        self.name: str = meta["name"]
        self.source_sha256: str = meta["source_sha256"]
        self._relations = sorted(r for (r,) in self._rows("SELECT name FROM relations"))
        self._types = sorted(t for (t,) in self._rows("SELECT DISTINCT type FROM types"))
        self._numeric = sorted(r for (r,) in self._rows("SELECT name FROM relations WHERE literal"))

    def _rows(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._conn.close()

    def label(self, node: str) -> str:
        rows = self._rows("SELECT name FROM nodes WHERE id = ?", node)
        return str(rows[0][0]) if rows else node

    def is_node(self, node: str) -> bool:
        return bool(self._rows("SELECT 1 FROM nodes WHERE id = ?", node))

    def find(self, name: str) -> list[str]:
        rows = self._rows("SELECT id FROM nodes WHERE name = ? ORDER BY kind, id", name)
        return [str(r[0]) for r in rows]

    def relation_names(self) -> list[str]:
        return list(self._relations)

    def type_names(self) -> list[str]:
        return list(self._types)

    def numeric_relations(self) -> list[str]:
        return list(self._numeric)

    def follow(self, nodes: Iterable[str], relation: str, reverse: bool) -> frozenset[str]:
        src, dst = ("tail", "head") if reverse else ("head", "tail")
        sql = (
            f"SELECT DISTINCT {dst} FROM triples WHERE relation = ? "
            f"AND {src} IN (SELECT value FROM json_each(?))"
        )
        return frozenset(str(r[0]) for r in self._rows(sql, relation, json.dumps(list(nodes))))

    def incident(self, nodes: Iterable[str]) -> dict[str, int]:
        ids = json.dumps(list(nodes))
        out = self._rows(
            "SELECT relation, COUNT(DISTINCT head) FROM triples "
            "WHERE head IN (SELECT value FROM json_each(?)) GROUP BY relation",
            ids,
        )
        inc = self._rows(
            "SELECT relation, COUNT(DISTINCT tail) FROM triples "
            "WHERE tail IN (SELECT value FROM json_each(?)) GROUP BY relation",
            ids,
        )
        found = {str(r): int(n) for r, n in out} | {f"~{r}": int(n) for r, n in inc}
        return dict(sorted(found.items()))

    def with_type(self, nodes: Iterable[str], type_: str) -> frozenset[str]:
        sql = "SELECT node FROM types WHERE type = ? AND node IN (SELECT value FROM json_each(?))"
        return frozenset(str(r[0]) for r in self._rows(sql, type_, json.dumps(list(nodes))))

    def of_type(self, type_: str) -> frozenset[str]:
        return frozenset(
            str(r[0]) for r in self._rows("SELECT node FROM types WHERE type = ?", type_)
        )

    def values(self, nodes: Iterable[str], relation: str) -> dict[str, list[float]]:
        sql = (
            "SELECT head, value FROM triples WHERE relation = ? AND value IS NOT NULL "
            "AND head IN (SELECT value FROM json_each(?)) ORDER BY head, value"
        )
        found: dict[str, list[float]] = defaultdict(list)
        for head, value in self._rows(sql, relation, json.dumps(list(nodes))):
            found[str(head)].append(float(value))
        return dict(found)

    def extreme(self, nodes: Iterable[str], relation: str, largest: bool) -> frozenset[str]:
        agg = "MAX" if largest else "MIN"
        sql = (
            f"WITH best AS (SELECT head, {agg}(value) AS v FROM triples WHERE relation = ? "
            "AND value IS NOT NULL AND head IN (SELECT value FROM json_each(?)) GROUP BY head) "
            f"SELECT head FROM best WHERE v = (SELECT {agg}(v) FROM best)"
        )
        return frozenset(str(r[0]) for r in self._rows(sql, relation, json.dumps(list(nodes))))

    def compare(self, relation: str, op: CompareOp, value: float) -> frozenset[str]:
        sql = (
            "SELECT DISTINCT head FROM triples WHERE relation = ? "
            f"AND value IS NOT NULL AND value {_SQL_OPS[op]} ?"
        )
        return frozenset(str(r[0]) for r in self._rows(sql, relation, value))

    def between(self, relation: str, low: float, high: float) -> frozenset[str]:
        sql = "SELECT DISTINCT head FROM triples WHERE relation = ? AND value BETWEEN ? AND ?"
        return frozenset(str(r[0]) for r in self._rows(sql, relation, low, high))


class CachedKB(SQLiteKB):
    """:class:`SQLiteKB` answered from a :class:`Graph` of numpy arrays loaded on first use.

    The string interface returns plain frozensets; :meth:`node_sets` gives the executor the graph
    itself, whose results stay integer arrays until they are shown or answered.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._graph: Graph | None = None
        self._load_lock = threading.Lock()

    @property
    def graph(self) -> Graph:
        """The whole KB as arrays (loaded once, on first use; built and cached the first time)."""
        if self._graph is None:
            with self._load_lock:
                if self._graph is None:
                    self._graph = load_graph(self.path, self._rows, self.source_sha256)
        return self._graph

    def node_sets(self) -> Graph:
        """The executor's fast set operations (see :func:`node_sets`)."""
        return self.graph

    def label(self, node: str) -> str:
        return self.graph.label(node)

    def is_node(self, node: str) -> bool:
        return node in self.graph.number

    def find(self, name: str) -> list[str]:
        return list(self.graph.by_name.get(name, []))

    def follow(self, nodes: Iterable[str], relation: str, reverse: bool) -> frozenset[str]:
        return frozenset(self.graph.follow(self.graph.lift(nodes), relation, reverse))

    def incident(self, nodes: Iterable[str]) -> dict[str, int]:
        return self.graph.incident(self.graph.lift(nodes))

    def with_type(self, nodes: Iterable[str], type_: str) -> frozenset[str]:
        return frozenset(self.graph.with_type(self.graph.lift(nodes), type_))

    def of_type(self, type_: str) -> frozenset[str]:
        return frozenset(self.graph.of_type(type_))

    def values(self, nodes: Iterable[str], relation: str) -> dict[str, list[float]]:
        return self.graph.values_of(self.graph.lift(nodes), relation)

    def extreme(self, nodes: Iterable[str], relation: str, largest: bool) -> frozenset[str]:
        return frozenset(self.graph.extreme(self.graph.lift(nodes), relation, largest))

    def compare(self, relation: str, op: CompareOp, value: float) -> frozenset[str]:
        return frozenset(self.graph.compare(relation, op, value))

    def between(self, relation: str, low: float, high: float) -> frozenset[str]:
        return frozenset(self.graph.between(relation, low, high))


@functools.lru_cache(maxsize=4)
def open_kb(name: str = "metaqa", cached: bool = True) -> KnowledgeBase:
    """The named KB, built into the user cache on first use and shared within the process."""
    if name != "metaqa":
        raise ValueError(f"unknown KB {name!r}; available: metaqa (or open a file with SQLiteKB)")
    path = ensure_built(metaqa_source(), METAQA)
    return CachedKB(path) if cached else SQLiteKB(path)
