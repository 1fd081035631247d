"""The numpy graph behind CachedKB: same answers as SQL on every operation, sets that act as sets."""

from __future__ import annotations

import copy
import pickle
import random
from pathlib import Path

import pytest

from agentgym.envs.kbqa import sexpr
from agentgym.envs.kbqa.actions import Action, ParseError, parse
from agentgym.envs.kbqa.build import METAQA, ensure_built, entity_id
from agentgym.envs.kbqa.executor import Executor, Outcome, Result
from agentgym.envs.kbqa.graph import NodeSet
from agentgym.envs.kbqa.graphfile import GRAPH_VERSION, load_graph
from agentgym.envs.kbqa.kb import CachedKB, FrozenSets, SQLiteKB, node_sets, open_kb
from agentgym.task import TaskSuite

TASKS = Path(__file__).resolve().parents[2] / "tasks" / "kbqa"


@pytest.fixture(scope="module")
def executors() -> tuple[Executor, Executor]:
    cached = open_kb("metaqa")
    assert isinstance(cached, CachedKB)
    return Executor(SQLiteKB(cached.path)), Executor(cached)


def seen(executor: Executor, outcome: Outcome) -> tuple[object, ...]:
    """Everything an agent or the env can see of an outcome."""
    result = outcome.result
    shown = executor.show(result, 7) if result is not None else None
    ids = (result.ids, result.count) if result is not None else None
    return ids, shown, outcome.relations, outcome.answer, outcome.error, outcome.note


def run_both(executors: tuple[Executor, Executor], steps: list[Action]) -> int:
    """Run ``steps`` on the SQL and the cached executor side by side; every outcome must match."""
    (sql, fast), kept = executors, 0
    results: tuple[list[Result], list[Result]] = ([], [])
    for action in steps:
        outcomes = [ex.run(action, rs) for ex, rs in zip(executors, results, strict=True)]
        assert seen(sql, outcomes[0]) == seen(fast, outcomes[1]), action
        for out, rs in zip(outcomes, results, strict=True):
            if out.result is not None:
                rs.append(out.result)
                kept += 1
    assert all(isinstance(r.nodes, NodeSet | frozenset) for r in results[1])
    return kept


def parsed(text: str) -> Action:
    action = parse(text)
    assert not isinstance(action, ParseError), text
    return action


def test_reference_plans_run_identically_on_sql_and_cached(
    executors: tuple[Executor, Executor],
) -> None:
    types = executors[0].kb.type_names()
    for name, step in (("metaqa-test", 151), ("comp-test", 31), ("comp-train", 149)):
        for task in TaskSuite.load(TASKS / f"{name}.jsonl").tasks[::step]:
            plan = [parsed(a) for a in sexpr.to_actions(task.gold["sexpr"], types)]
            run_both(executors, plan)


def random_action(rng: random.Random, kb: CachedKB, n_results: int) -> Action:
    """Any operation, with good and bad arguments, over the results so far."""
    movies, people = sorted(kb.of_type("movie")), sorted(kb.of_type("actor"))
    ref = f"#{rng.randrange(n_results + 1)}" if n_results else "#0"
    expr = rng.choice(
        [ref, ref, ref, rng.choice(movies), rng.choice(people), "1999", "m.0000000000", "Heat"]
    )
    relation = rng.choice(kb.relation_names() + ["~starred_actors", "~directed_by", "nope"])
    number = rng.choice(["1999", "1999.5", "2010", "-inf", "inf", "nan", "abc"])
    return rng.choice(
        [
            Action("find_relation", (expr, relation)),
            Action("find_relation", (expr, relation)),
            Action("merge", (expr, rng.choice([ref, "movie", "actor", "year", "robot"]))),
            Action("order", (rng.choice(["MAX", "min", "top"]), expr, "release_year")),
            Action("order", ("MAX", expr, rng.choice(["directed_by", "~release_year"]))),
            Action(
                "compare",
                (rng.choice(["lt", "le", "gt", "ge", "eq", "ne", "~"]), "release_year", number),
            ),
            Action(
                "time_constraint",
                ("release_year", rng.choice(["1990s", "1990-1999", "2000", "1999-1990", "x"])),
            ),
            Action("count", (expr,)),
            Action("get_relations", (expr,)),
            Action("answer", (f"{ref}, m.0000000000",)),
        ]
    )


def test_random_operations_match_sql_exactly(executors: tuple[Executor, Executor]) -> None:
    kb = executors[1].kb
    assert isinstance(kb, CachedKB)
    rng = random.Random(7)
    for _ in range(5):  # short chains, so references point at real (often large) results
        steps: list[Action] = []
        for _ in range(14):
            steps.append(random_action(rng, kb, len(steps)))
        assert run_both(executors, steps) > 0


def test_every_operator_on_large_sets_matches_sql(executors: tuple[Executor, Executor]) -> None:
    drama, mann = entity_id("Drama"), entity_id("Michael Mann")
    plan = [
        f"Find_relation[{drama} | ~has_genre]",  # #0: 4,000 movies
        "Time_constraint[release_year | 1990s]",  # #1
        "Merge[#0 | #1]",  # #2
        "Find_relation[#0 | directed_by]",  # #3: fan-out from thousands
        "Find_relation[#3 | ~directed_by]",  # #4
        "Order[MAX | #0 | release_year]",  # #5
        "Order[MIN | #4 | release_year]",  # #6
        "Compare[ne | release_year | 1999]",  # #7
        "Merge[#3 | writer]",  # #8
        "Count[#4]",  # #9
        "Get_relations[#3]",
        f"Find_relation[{mann} | directed_by]",  # #10, empty: a note names the other direction
        f"Find_relation[{mann} | ~directed_by]",  # #11: a dozen movies
        "Merge[#11 | #0]",  # a small set against a large one
        "Find_relation[#11 | starred_actors]",
        "Answer[#2]",
    ]
    run_both(executors, [parsed(a) for a in plan])


def test_node_sets_act_like_frozensets(executors: tuple[Executor, Executor]) -> None:
    fast = executors[1]
    results: list[Result] = []
    for text in (f"Find_relation[{entity_id('Michael Mann')} | ~directed_by]", "Count[#0]"):
        outcome = fast.run(parsed(text), results)
        assert outcome.result is not None
        results.append(outcome.result)
    nodes, plain = results[0].nodes, results[0].ids
    assert isinstance(nodes, NodeSet) and isinstance(plain, frozenset) and len(plain) == 12
    assert nodes == plain and plain == nodes and hash(nodes) == hash(plain)
    assert entity_id("Heat") in nodes and "Heat" not in nodes and 3 not in nodes
    assert sorted(nodes) == sorted(plain) and nodes & {entity_id("Heat")} == {entity_id("Heat")}
    assert (nodes | {"x"}) == plain | {"x"} and (nodes - plain) == frozenset()
    assert copy.deepcopy(nodes) is nodes and copy.deepcopy(results) == results
    assert pickle.loads(pickle.dumps(results[0])) == results[0]
    assert results[1].ids == {"12"} and results[1].count == 12


def test_any_other_kb_gets_frozen_sets(executors: tuple[Executor, Executor]) -> None:
    sql, fast = executors
    assert isinstance(node_sets(sql.kb), FrozenSets)
    assert node_sets(fast.kb) is fast.kb.graph  # type: ignore[attr-defined]


def test_graph_is_built_once_then_loaded(tmp_path: Path) -> None:
    source = tmp_path / "kb.tsv"
    source.write_text(
        "Heat\tdirected_by\tMichael Mann\nHeat\trelease_year\t1995\nHeat\trelease_year\t1995\n"
        "Ali\tdirected_by\tMichael Mann\nAli\trelease_year\t2001\nAli\thas_genre\tDrama\n",
        encoding="utf-8",
    )
    path = ensure_built(source, METAQA, cache=tmp_path)
    cache = path.with_name(f"{path.stem}.graph-v{GRAPH_VERSION}.npz")
    built = CachedKB(path)
    assert built.follow([entity_id("Michael Mann")], "directed_by", True) == {
        entity_id("Heat"),
        entity_id("Ali"),
    }
    stamp = cache.stat().st_mtime_ns
    loaded = CachedKB(path)
    assert loaded.values([entity_id("Heat")], "release_year") == {entity_id("Heat"): [1995.0] * 2}
    assert cache.stat().st_mtime_ns == stamp, "a cached graph must be loaded, not rebuilt"
    sql = SQLiteKB(path)
    load_graph(path, sql._rows, "another source")
    assert cache.stat().st_mtime_ns != stamp, "a graph of another source must be rebuilt"
    cache.write_bytes(b"not a zip file")
    again = CachedKB(path)
    assert again.extreme(again.of_type("movie"), "release_year", True) == {entity_id("Ali")}
    assert again.incident([entity_id("Heat")]) == sql.incident([entity_id("Heat")])
    assert cache.read_bytes()[:2] == b"PK", "an unreadable cache is rebuilt"
    assert list(cache.parent.glob("*.tmp")) == []
