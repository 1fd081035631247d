"""Build a knowledge base's SQLite file from a TSV of named triples, once, and cache it.

The file lives in the user cache (``$AGENTGYM_CACHE``, else ``$XDG_CACHE_HOME/agentgym``, else
``~/.cache/agentgym``) under ``kbqa/<name>-<sha256 of the source>-v<schema>.sqlite``, so a changed
source or schema gets a new file and an unchanged one is never rebuilt. Nothing is built on import.
The write goes to a temporary file renamed into place, so parallel processes never see half a KB.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import sqlite_utils

from agentgym.cache import cache_dir, sha256_file

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class KBSpec:
    """How to read one TSV of ``head<TAB>relation<TAB>tail`` triples into a typed KB."""

    name: str
    """Short name of the KB (``metaqa``); part of the cache file name."""
    head_type: str
    """Type of every head entity."""
    tail_types: dict[str, str]
    """Relation -> type of its tail entities."""
    literal_relations: dict[str, str] = field(default_factory=dict)
    """Relation -> regex: tails matching it are numeric literals (their id is their text)."""


METAQA = KBSpec(
    name="metaqa",
    head_type="movie",
    tail_types={
        "directed_by": "director",
        "written_by": "writer",
        "starred_actors": "actor",
        "has_genre": "genre",
        "has_tags": "tag",
        "in_language": "language",
        "release_year": "year",
        "has_imdb_rating": "rating",
        "has_imdb_votes": "votes",
    },
    literal_relations={"release_year": r"\d{4}"},
)


def entity_id(name: str) -> str:
    """Stable id of a named entity: ``m.`` + 10 hex digits of the name's sha256."""
    return "m." + hashlib.sha256(name.encode("utf-8")).hexdigest()[:10]


def metaqa_source() -> Path:
    """The MetaQA KB shipped as package data (``data/metaqa/kb.tsv``)."""
    return Path(str(resources.files("agentgym.envs.kbqa").joinpath("data/metaqa/kb.tsv")))


def ensure_built(source: Path, spec: KBSpec, cache: Path | None = None) -> Path:
    """Path of the SQLite KB for ``source``, building it first if the cache lacks it."""
    target = (cache or cache_dir()) / "kbqa"
    path = target / f"{spec.name}-{sha256_file(source)[:16]}-v{SCHEMA_VERSION}.sqlite"
    if not path.exists():
        target.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target, suffix=".tmp")
        os.close(fd)
        try:
            build(source, spec, Path(tmp))
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return path


# ---------------------------------------------------------------------------- building
def _read(source: Path) -> Iterator[tuple[int, str, str, str]]:
    with open(source, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3 or not all(parts):
                raise ValueError(f"{source}:{lineno}: expected head<TAB>relation<TAB>tail")
            yield lineno, parts[0], parts[1], parts[2]


class _Nodes:
    """Assigns ids while reading; refuses an id collision (two names, one hash prefix)."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, object]] = {}
        self.types: set[tuple[str, str]] = set()

    def entity(self, name: str, type_: str) -> str:
        node = entity_id(name)
        row = self.rows.setdefault(node, {"id": node, "name": name, "kind": "entity"})
        if row["name"] != name:
            raise ValueError(f"entity id collision: {name!r} and {row['name']!r} -> {node}")
        self.types.add((node, type_))
        return node

    def literal(self, text: str, datatype: str) -> str:
        self.rows.setdefault(
            text,
            {
                "id": text,
                "name": text,
                "kind": "literal",
                "datatype": datatype,
                "value": float(text),
            },
        )
        self.types.add((text, datatype))
        return text


def build(source: Path, spec: KBSpec, out: Path) -> None:
    """Write the SQLite KB of ``source`` to ``out``: nodes, typed triples, types, relations, meta."""
    literal = {r: re.compile(rx) for r, rx in spec.literal_relations.items()}
    nodes, triples = _Nodes(), []
    for lineno, head, relation, tail in _read(source):
        if relation not in spec.tail_types:
            raise ValueError(f"{source}:{lineno}: relation {relation!r} is not in the KB spec")
        h = nodes.entity(head, spec.head_type)
        type_ = spec.tail_types[relation]
        pattern = literal.get(relation)
        if pattern is not None and pattern.fullmatch(tail):
            t = nodes.literal(tail, type_)
            triples.append({"head": h, "relation": relation, "tail": t, "value": float(tail)})
        else:
            t = nodes.entity(tail, type_)
            triples.append({"head": h, "relation": relation, "tail": t, "value": None})
    _write(out, spec, sha256_file(source), nodes, triples)


def _write(
    out: Path, spec: KBSpec, sha: str, nodes: _Nodes, triples: list[dict[str, object]]
) -> None:
    out.unlink(missing_ok=True)
    db = sqlite_utils.Database(out)
    # a temporary file, renamed into place only when complete: no journal and no fsync per batch
    # (which made the build 5x slower), one fsync at the end instead
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    columns = {"id": str, "name": str, "kind": str, "datatype": str, "value": float}
    db.table("nodes").insert_all(nodes.rows.values(), pk="id", columns=columns, batch_size=5000)
    db.table("triples").insert_all(
        triples,
        columns={"head": str, "relation": str, "tail": str, "value": float},
        batch_size=5000,
    )
    db.table("types").insert_all(
        ({"node": n, "type": t} for n, t in sorted(nodes.types)), pk=("node", "type")
    )
    db.table("relations").insert_all(
        {
            "name": r,
            "head_type": spec.head_type,
            "tail_type": t,
            "literal": r in spec.literal_relations,
        }
        for r, t in spec.tail_types.items()
    )
    db.table("meta").insert_all(
        [
            {"key": "name", "value": spec.name},
            {"key": "source_sha256", "value": sha},
            {"key": "schema_version", "value": str(SCHEMA_VERSION)},
        ],
        pk="key",
    )
    db.table("nodes").create_index(["name"])
    db.table("triples").create_index(["head", "relation"])
    db.table("triples").create_index(["relation", "tail"])
    db.table("triples").create_index(["relation", "value"])
    db.table("types").create_index(["type", "node"])
    db.execute("ANALYZE")
    db.conn.commit()
    db.close()
    with open(out, "rb+") as fh:
        os.fsync(fh.fileno())
