"""The MetaQA KB in SQLite: built once from the real TSV, cached by sha256, SQL and cache agree."""

from __future__ import annotations

import random
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from agentgym.envs.kbqa.build import (
    METAQA,
    KBSpec,
    ensure_built,
    entity_id,
    metaqa_source,
    sha256_file,
)
from agentgym.envs.kbqa.kb import COMPARE_OPS, CachedKB, SQLiteKB, open_kb

SOURCE = metaqa_source()


@pytest.fixture(scope="module")
def triples() -> list[tuple[str, str, str]]:
    with open(SOURCE, encoding="utf-8") as fh:
        return [tuple(line.rstrip("\n").split("\t")) for line in fh]  # type: ignore[misc]


@pytest.fixture(scope="module")
def kbs() -> tuple[SQLiteKB, CachedKB]:
    cached = open_kb("metaqa")
    assert isinstance(cached, CachedKB)
    return SQLiteKB(cached.path), cached


def node(name: str, relation: str = "") -> str:
    return (
        name
        if relation == "release_year" and name.isdigit() and len(name) == 4
        else entity_id(name)
    )


def test_shipped_kb_is_the_shared_metaqa_file(triples: list[tuple[str, str, str]]) -> None:
    assert len(triples) == 130_172
    assert len({r for _, r, _ in triples}) == 9
    shared = Path(__file__).resolve().parents[3] / "shared" / "data" / "metaqa" / "kb.tsv"
    if shared.exists():
        assert sha256_file(shared) == sha256_file(SOURCE)


def test_build_once_then_reuse(tmp_path: Path) -> None:
    path = ensure_built(SOURCE, METAQA, cache=tmp_path)
    assert path.parent == tmp_path / "kbqa" and sha256_file(SOURCE)[:16] in path.name
    stamp = path.stat().st_mtime_ns
    assert ensure_built(SOURCE, METAQA, cache=tmp_path) == path
    assert path.stat().st_mtime_ns == stamp, "an unchanged source must not be rebuilt"
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM triples").fetchone() == (130_172,)
        assert dict(db.execute("SELECT key, value FROM meta"))["source_sha256"] == sha256_file(
            SOURCE
        )
        indexes = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert any("relation_tail" in i for i in indexes) and any(
            "head_relation" in i for i in indexes
        )
    assert list((tmp_path / "kbqa").glob("*.tmp")) == []


def test_changed_source_gets_a_new_file_and_bad_rows_are_named(tmp_path: Path) -> None:
    small = tmp_path / "kb.tsv"
    small.write_text(
        "Heat\tdirected_by\tMichael Mann\nHeat\trelease_year\t1995\n", encoding="utf-8"
    )
    path = ensure_built(small, METAQA, cache=tmp_path)
    kb = SQLiteKB(path)
    assert kb.follow([entity_id("Heat")], "release_year", False) == {"1995"}
    assert kb.label("1995") == "1995" and kb.with_type(["1995"], "year") == {"1995"}
    small.write_text("Heat\tdirected_by\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"kb.tsv:1: expected head<TAB>relation<TAB>tail"):
        ensure_built(small, METAQA, cache=tmp_path)
    small.write_text("Heat\tscored_by\tElliot Goldenthal\n", encoding="utf-8")
    with pytest.raises(ValueError, match="'scored_by' is not in the KB spec"):
        ensure_built(small, KBSpec("x", "movie", {"directed_by": "director"}), cache=tmp_path)


def test_nodes_types_and_literals(
    kbs: tuple[SQLiteKB, CachedKB], triples: list[tuple[str, str, str]]
) -> None:
    _, kb = kbs
    names = {h for h, _, _ in triples} | {t for _, r, t in triples if node(t, r).startswith("m.")}
    assert all(kb.is_node(entity_id(n)) for n in list(names)[::50])
    assert kb.find("Temuera Morrison") == [entity_id("Temuera Morrison")]
    assert kb.type_names() == sorted(set(METAQA.tail_types.values()) | {"movie"})
    assert kb.numeric_relations() == ["release_year"]
    # a non-year value of release_year stays an entity (a known MetaQA quirk), never a literal
    assert kb.follow([entity_id("The Grand Budapest Hotel")], "release_year", False) >= {
        entity_id("hotel")
    }


def test_follow_matches_the_tsv(
    kbs: tuple[SQLiteKB, CachedKB], triples: list[tuple[str, str, str]]
) -> None:
    out: dict[tuple[str, str], set[str]] = defaultdict(set)
    inc: dict[tuple[str, str], set[str]] = defaultdict(set)
    for h, r, t in triples:
        out[(node(h), r)].add(node(t, r))
        inc[(node(t, r), r)].add(node(h))
    for kb in kbs:
        for (h, r), tails in list(out.items())[::997]:
            assert kb.follow([h], r, False) == tails
        for (t, r), heads in list(inc.items())[::997]:
            assert kb.follow([t], r, True) == heads


def test_sql_and_cached_kb_agree(kbs: tuple[SQLiteKB, CachedKB]) -> None:
    sql, cached = kbs
    rng = random.Random(0)
    movies = sorted(cached.of_type("movie"))
    for _ in range(30):
        group = rng.sample(movies, rng.choice([1, 5, 300]))
        for r in ("directed_by", "starred_actors", "release_year", "has_genre"):
            found = cached.follow(group, r, False)
            assert sql.follow(group, r, False) == found
            assert sql.follow(found, r, True) == cached.follow(found, r, True)
        assert sql.incident(group) == cached.incident(group)
        assert sql.values(group, "release_year") == cached.values(group, "release_year")
        for largest in (True, False):
            assert sql.extreme(group, "release_year", largest) == cached.extreme(
                group, "release_year", largest
            )
        assert sql.with_type(group + ["1999"], "movie") == cached.with_type(
            group + ["1999"], "movie"
        )
    for op in COMPARE_OPS:
        for year in (1950, 1999.5, 2010):
            assert sql.compare("release_year", op, year) == cached.compare(
                "release_year", op, year
            ), op
    assert sql.between("release_year", 1990, 1999) == cached.between("release_year", 1990, 1999)
    assert sql.find("1984") == cached.find("1984")
    assert sql.label(movies[0]) == cached.label(movies[0]) and sql.label("nope") == "nope"
