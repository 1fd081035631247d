"""A KB's :class:`Graph` arrays: built from its SQLite tables once, then cached beside that file.

Building takes about a second (every triple's ids looked up); loading the cached ``.npz`` takes a
few tens of milliseconds. The cache is ``<kb file stem>.graph-v<N>.npz`` next to the KB file, which
is already keyed by the source's sha256; it is written to a temporary file and renamed, so parallel
processes never read half of one, and a KB in a read-only place is simply not cached.

Arrays: ``ids``, ``names``, ``kinds`` (nodes in display order: name, then id; strings as
:func:`~agentgym.envs.kbqa.graph.encode` bytes), ``empty``,
``relations``, ``out:<r>:ptr|idx`` and ``inc:<r>:ptr|idx`` (CSR adjacency, rows sorted and
unique), ``numeric`` and ``val:<r>:<field>`` (:data:`~agentgym.envs.kbqa.graph.VALUE_FIELDS`),
``types`` and ``type_masks`` (one row of node flags per type); in the file also ``source``, the
sha256 of the KB's source, so a KB file rewritten in place never gets a stale graph.
"""

from __future__ import annotations

import math
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from agentgym.envs.kbqa.graph import Arrays, Graph, Index, decode, encode, unique

GRAPH_VERSION = 3
Rows = Callable[[str], list[tuple[Any, ...]]]
"""Runs one SQL query on the KB file and returns its rows."""


def load_graph(path: Path, rows: Rows, source: str) -> Graph:
    """The graph of the KB file ``path`` built from ``source`` (its sha256): from the cache if
    that was made from the same source, else built with ``rows`` and cached."""
    cache = path.with_name(f"{path.stem}.graph-v{GRAPH_VERSION}.npz")
    try:
        with np.load(cache, allow_pickle=False) as saved:
            if decode(saved["source"]) == [source]:
                return Graph({name: saved[name] for name in saved.files})
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        pass  # not cached yet (or unreadable): build it
    arrays = from_rows(
        rows("SELECT id, name, kind FROM nodes"),
        rows("SELECT head, relation, tail, value FROM triples"),
        rows("SELECT node, type FROM types"),
    )
    _save(cache, arrays | {"source": encode([source])})
    return Graph(arrays)


def from_rows(
    nodes: list[tuple[str, str, str]],
    triples: list[tuple[str, str, str, float | None]],
    types: list[tuple[str, str]],
) -> Arrays:
    """The arrays of a KB given the rows of its ``nodes``, ``triples`` and ``types`` tables."""
    display = sorted((name, node, kind) for node, name, kind in nodes)
    number = {node: k for k, (_, node, _) in enumerate(display)}
    size = len(display)
    arrays: Arrays = {
        "ids": encode([node for _, node, _ in display]),
        "names": encode([name for name, _, _ in display]),
        "kinds": encode([kind for _, _, kind in display]),
        "empty": np.empty(0, dtype=np.intp),
    }
    by_relation: dict[str, list[tuple[str, str, float | None]]] = {}
    for head, relation, tail, value in triples:
        by_relation.setdefault(relation, []).append((head, tail, value))
    numeric = []
    for relation, group in sorted(by_relation.items()):
        heads = _numbers(number, (h for h, _, _ in group))
        tails = _numbers(number, (t for _, t, _ in group))
        arrays |= _adjacency(f"out:{relation}", heads, tails, size)
        arrays |= _adjacency(f"inc:{relation}", tails, heads, size)
        values = np.array([math.nan if v is None else v for *_, v in group], dtype=np.float64)
        has = ~np.isnan(values)
        if has.any():
            numeric.append(relation)
            arrays |= _values(f"val:{relation}", heads[has], values[has], size)
    typed: dict[str, list[str]] = {}
    for node, type_ in types:
        typed.setdefault(type_, []).append(node)
    masks = np.zeros((len(typed), size), dtype=bool)
    for row, members in enumerate(sorted(typed.items())):
        masks[row, _numbers(number, members[1])] = True
    return arrays | {
        "relations": encode(sorted(by_relation)),
        "numeric": encode(numeric),
        "types": encode(sorted(typed)),
        "type_masks": masks,
    }


def _numbers(number: dict[str, int], ids: Iterable[str]) -> Index:
    return np.array(list(map(number.__getitem__, ids)), dtype=np.intp)


def _adjacency(prefix: str, src: Index, dst: Index, size: int) -> Arrays:
    pairs = unique(src * size + dst)  # sorted by source, then target; repeated triples dropped
    ptr = np.concatenate(([0], np.cumsum(np.bincount(pairs // size, minlength=size))))
    return {f"{prefix}:ptr": ptr.astype(np.intp), f"{prefix}:idx": (pairs % size).astype(np.intp)}


def _values(prefix: str, heads: Index, values: np.ndarray[Any, Any], size: int) -> Arrays:
    by_value, by_head = np.lexsort((heads, values)), np.lexsort((values, heads))
    ptr = np.concatenate(([0], np.cumsum(np.bincount(heads, minlength=size))))
    top, bottom = np.full(size, np.nan), np.full(size, np.nan)
    np.fmax.at(top, heads, values)
    np.fmin.at(bottom, heads, values)
    fields = {
        "keys": values[by_value],
        "heads": heads[by_value],
        "ptr": ptr.astype(np.intp),
        "by_head": values[by_head],
        "top": top,
        "bottom": bottom,
    }
    return {f"{prefix}:{name}": array for name, array in fields.items()}


def _save(cache: Path, arrays: Arrays) -> None:
    """Write atomically; a read-only or full disk just leaves the graph uncached."""
    try:
        fd, tmp = tempfile.mkstemp(dir=cache.parent, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, cache)
    except OSError:
        pass
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
