"""agentgym/KBQA-v0 on its real suites: expert, operator semantics, gold fidelity, format, limits."""

from __future__ import annotations

import functools
import hashlib
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from support import shared_data

import agentgym
from agentgym.env import ResetNeeded
from agentgym.envs.kbqa import sexpr
from agentgym.envs.kbqa.actions import Action, ParseError, parse
from agentgym.envs.kbqa.build import entity_id, metaqa_source
from agentgym.envs.kbqa.env import KBQAEnv
from agentgym.envs.kbqa.generate import generate
from agentgym.envs.kbqa.scoring import score
from agentgym.task import Task, TaskSuite, check_suite

TASKS = Path(__file__).resolve().parents[2] / "tasks" / "kbqa"
SUITES = ["metaqa-train", "metaqa-test", "comp-train", "comp-test"]
DATA = shared_data()
ONE_HOP = "kbqa-metaqa-1hop-test-00000"


@pytest.fixture(scope="module")
def suites() -> dict[str, TaskSuite]:
    return {name: TaskSuite.load(TASKS / f"{name}.jsonl") for name in SUITES}


@pytest.fixture()
def env() -> KBQAEnv:
    return KBQAEnv(suite=str(TASKS / "metaqa-test.jsonl"))


def run(env: KBQAEnv, task: Task | str, actions: list[Any]) -> list[Any]:
    trace: list[Any] = [env.reset(seed=0, options={"task": task})[0]]
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        trace.append((obs, reward, terminated, truncated, info))
        if terminated or truncated:
            break
    return trace


def expert(env: KBQAEnv, task: Task | str) -> tuple[list[str], dict[str, Any]]:
    env.reset(seed=0, options={"task": task})
    actions = []
    while True:
        actions.append(env.expert_action())
        *_, terminated, truncated, info = env.step(actions[-1])
        if terminated or truncated:
            return actions, info


# ------------------------------------------------------------ suites, expert, gold fidelity
def test_suite_sizes_and_splits(suites: dict[str, TaskSuite]) -> None:
    sizes = {n: len(s) for n, s in suites.items()}
    assert sizes == {
        "metaqa-train": 4000,
        "metaqa-test": 2000,
        "comp-train": 1500,
        "comp-test": 900,
    }
    for name in ("metaqa-train", "metaqa-test"):
        hops = [t.tags[0] for t in suites[name]]
        assert hops.count("1hop") == hops.count("2hop")
    tags = [t.tags[0] for t in suites["comp-test"]]
    assert {g: tags.count(g) for g in set(tags)} == {
        "iid": 300,
        "compositional": 300,
        "zero-shot": 300,
    }
    train_sx = {t.gold["sexpr"] for t in suites["comp-train"]}
    assert train_sx.isdisjoint(t.gold["sexpr"] for t in suites["comp-test"])


def test_grailqa_splits_mean_what_they_say(suites: dict[str, TaskSuite]) -> None:
    train = suites["comp-train"]
    seen_rel = set().union(*(sexpr.relations_of(t.gold["sexpr"]) for t in train))
    seen_templates = {t.tags[1] for t in train}
    for task in suites["comp-test"]:
        relations, template = sexpr.relations_of(task.gold["sexpr"]), task.tags[1]
        if task.tags[0] == "zero-shot":
            assert relations - seen_rel, task.id
        else:
            assert relations <= seen_rel, task.id
        assert (template in seen_templates) == (task.tags[0] != "compositional"), task.id


@pytest.mark.parametrize("name", SUITES)
def test_expert_solves_every_task(name: str, suites: dict[str, TaskSuite]) -> None:
    env = KBQAEnv()
    for task in suites[name]:
        actions, info = expert(env, task)
        assert info["success"] and info["f1"] == 1.0 and info["em"] == 1.0, task.id
        assert len(actions) <= task.config["max_turns"] - 4


def test_metaqa_gold_is_the_metaqa_answer_set(suites: dict[str, TaskSuite]) -> None:
    if not (DATA / "metaqa" / "1hop_test.jsonl").exists():
        pytest.skip("shared MetaQA questions not available")
    originals = {}
    for hop in ("1hop", "2hop"):
        for line in (
            (DATA / "metaqa" / f"{hop}_test.jsonl").read_text(encoding="utf-8").splitlines()
        ):
            row = json.loads(line)
            originals[row["question"]] = row
    kb = KBQAEnv().kb
    for task in suites["metaqa-test"].tasks[::7]:
        row = originals[task.instruction]
        assert row["qtype"] in task.tags
        assert sorted(kb.label(i) for i in task.gold["answers"][0]) == sorted(row["answers"])


@functools.lru_cache(maxsize=1)
def _tsv() -> tuple[Any, Any, Any, Any]:
    """The TSV as plain dicts: forward and reverse adjacency, years per movie, people types."""
    fwd: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    rev: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    years: dict[str, list[int]] = defaultdict(list)
    types: dict[str, set[str]] = defaultdict(set)
    kinds = {"directed_by": "director", "written_by": "writer", "starred_actors": "actor"}
    for line in metaqa_source().read_text(encoding="utf-8").splitlines():
        h, r, t = line.rstrip("\n").split("\t")
        t_id = t if r == "release_year" and t.isdigit() and len(t) == 4 else entity_id(t)
        fwd[r][entity_id(h)].add(t_id)
        rev[r][t_id].add(entity_id(h))
        if t_id == t:
            years[entity_id(h)].append(int(t))
        if r in kinds:
            types[kinds[r]].add(t_id)
    return fwd, rev, years, types


def _tsv_eval(text: str) -> set[str]:
    """An independent evaluator of the gold S-expressions, straight over the TSV."""
    fwd, rev, years, types = _tsv()
    ops = {"lt": int.__lt__, "le": int.__le__, "gt": int.__gt__, "ge": int.__ge__}

    def ev(e: Any) -> set[str]:
        if isinstance(e, str):
            return {e}
        op = e[0]
        if op == "JOIN" and isinstance(e[1], list):
            return set().union(*(fwd[e[1][1]][x] for x in ev(e[2])))
        if op == "JOIN":
            return set().union(*(rev[e[1]][x] for x in ev(e[2])))
        if op == "AND" and isinstance(e[1], str) and e[1] in types:
            return ev(e[2]) & types[e[1]]
        if op == "AND":
            return ev(e[1]) & ev(e[2])
        if op == "COUNT":
            return {str(len(ev(e[1])))}
        if op in ("ARGMAX", "ARGMIN"):
            pick = max if op == "ARGMAX" else min
            best = {m: pick(years[m]) for m in ev(e[1]) if years[m]}
            return {m for m, v in best.items() if v == pick(best.values())}
        if op == "TC":
            lo, hi = map(int, e[3].split("-"))
            return {m for m in ev(e[1]) if any(lo <= y <= hi for y in years[m])}
        return {m for m, ys in years.items() if any(ops[op](y, int(e[2])) for y in ys)}

    return ev(sexpr.parse(text))


def test_compositional_gold_matches_an_independent_evaluator(suites: dict[str, TaskSuite]) -> None:
    for task in [*suites["comp-test"].tasks[::9], *suites["comp-train"].tasks[::50]]:
        assert _tsv_eval(task.gold["sexpr"]) == set(task.gold["answers"][0]), task.id


def test_generator_is_deterministic(tmp_path: Path) -> None:
    if not (DATA / "metaqa" / "1hop_test.jsonl").exists():
        pytest.skip("shared MetaQA questions not available")
    generate(DATA, tmp_path)
    manifest = json.loads((TASKS / "manifest.json").read_text())
    for name, digest in manifest["sha256"].items():
        assert hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() == digest, name
    assert json.loads((tmp_path / "manifest.json").read_text()) == manifest


def test_suites_validate() -> None:
    for name in ("metaqa-test", "comp-test"):
        assert check_suite(TASKS / f"{name}.jsonl") == []


# ------------------------------------------------------------ operators on real facts
def test_find_relation_both_directions(env: KBQAEnv) -> None:
    task = Task(
        id="t",
        env="agentgym/KBQA-v0",
        instruction="q",
        config={
            "question": "what movies did [Temuera Morrison] act in",
            "entities": [{"id": entity_id("Temuera Morrison"), "name": "Temuera Morrison"}],
        },
        gold={
            "sexpr": f"(JOIN starred_actors {entity_id('Temuera Morrison')})",
            "answers": [[entity_id(n) for n in ("Once Were Warriors", "River Queen", "Tracker")]],
        },
    )
    trace = run(
        env,
        task,
        [
            f"Get_relations[{entity_id('Temuera Morrison')}]",
            f"Find_relation[{entity_id('Temuera Morrison')} | starred_actors]",
            f"Find_relation[{entity_id('Temuera Morrison')} | ~starred_actors]",
            "Find_relation[#1 | release_year]",
            "Answer[#1]",
        ],
    )
    assert "~starred_actors (1)" in trace[1][0]
    assert (
        "#0 = " in trace[2][0]
        and "0 entities" in trace[2][0]
        and "use ~starred_actors" in trace[2][0]
    )
    assert "3 entities: Once Were Warriors" in trace[3][0] and trace[3][4]["result_size"] == 3
    assert "1994" in trace[4][0] and "2005" in trace[4][0]
    obs, reward, terminated, _, info = trace[5]
    assert terminated and info["success"] and reward == 1.0 and not info["format_ok"]


def test_merge_order_compare_time_count(env: KBQAEnv) -> None:
    kb = env.kb
    task = env.suite[ONE_HOP]
    env.reset(
        seed=0,
        options={"task": task.model_copy(update={"config": {**task.config, "max_turns": 20}})},
    )
    mann, heat = entity_id("Michael Mann"), entity_id("Heat")
    steps = [
        f"Find_relation[{mann} | ~directed_by]",
        "Merge[#0 | movie]",
        "Order[MAX | #0 | release_year]",
        "Compare[lt | release_year | 1990]",
        "Merge[#0 | #3]",
        "Time_constraint[release_year | 1990s]",
        "Merge[#0 | #5]",
        "Count[#6]",
    ]
    infos = [env.step(s)[4] for s in steps]
    assert all(i["valid"] for i in infos), infos
    movies = env.state.results[0].ids
    years = kb.values(movies, "release_year")
    assert heat in movies and env.state.results[1].ids == movies
    assert env.state.results[2].ids == {
        m for m, v in years.items() if max(v) == max(max(x) for x in years.values())
    }
    assert env.state.results[4].ids == {m for m, v in years.items() if min(v) < 1990}
    assert env.state.results[6].ids == {
        m for m, v in years.items() if any(1990 <= y <= 1999 for y in v)
    }
    assert (
        env.state.results[7].count == len(env.state.results[6].ids)
        and heat in env.state.results[6].ids
    )


@pytest.mark.parametrize(
    "action, message",
    [
        ("Find_relation[#4 | directed_by]", "there is no result #4"),
        ("Find_relation[Heat | directed_by]", "'Heat' is a name; its id is m."),
        ("Find_relation[m.0000000000 | produced_by]", "unknown expression"),
        (
            f"Find_relation[{entity_id('Heat')} | produced_by]",
            "unknown relation 'produced_by'; relations: directed_by",
        ),
        (f"Order[TOP | {entity_id('Heat')} | release_year]", "MAX or MIN"),
        (
            f"Order[MAX | {entity_id('Heat')} | directed_by]",
            "no numeric values; numeric relations: release_year",
        ),
        ("Compare[above | release_year | 1990]", "one of lt, le, gt, ge, eq, ne"),
        ("Compare[lt | release_year | soon]", "not a number"),
        ("Time_constraint[release_year | last year]", "YYYY, YYYY-YYYY or a decade"),
        ("Time_constraint[release_year | 1999-1990]", "ends before it starts"),
        (f"Merge[{entity_id('Heat')} | film]", "Types: actor, director"),
        ("Find_relation[#0]", "takes 2 non-empty argument(s)"),
        ("Lookup[Heat]", "Unknown action 'Lookup'"),
        ("<action>Count[#0]</action><action>Count[#0]</action>", "One action per turn"),
        ("<action>Count[#0]", "Malformed tags"),
        ("find heat", "Unrecognised action"),
        ("", "Empty action"),
        (7, "Actions are text"),
    ],
)
def test_bad_actions_are_explained_and_use_a_turn(env: KBQAEnv, action: Any, message: str) -> None:
    env.reset(seed=0, options={"task": ONE_HOP})
    obs, reward, terminated, truncated, info = env.step(action)
    assert message in obs, obs
    assert obs.startswith("<information>") and info["valid"] is False
    assert reward == 0.0 and not terminated and not truncated and env.state.turn == 1


def test_syntax_errors_show_the_grammar(env: KBQAEnv) -> None:
    env.reset(seed=0, options={"task": ONE_HOP})
    obs = env.step("hello")[0]
    for op in (
        "Find_relation[expr | relation]",
        "Merge[exprA | exprB]",
        "Order[MAX|MIN",
        "Compare[lt|le",
        "Time_constraint[relation | time]",
        "Count[expr]",
        "Answer[expr or ids]",
        "Get_relations[expr]",
    ):
        assert op in obs


# ------------------------------------------------------------ tagged format and reward
def test_tagged_turns_parse_and_earn_the_format_bonus(env: KBQAEnv) -> None:
    actions, _ = expert(env, ONE_HOP)
    tagged = [f"<think>step {i}</think>\n<action>{a}</action>" for i, a in enumerate(actions[:-1])]
    tagged.append(f"<think>done</think><answer>{actions[-1][len('Answer[') : -1]}</answer>")
    *_, (obs, reward, terminated, _, info) = run(env, ONE_HOP, tagged)
    assert terminated and info["format_ok"] and info["f1"] == 1.0 and reward == pytest.approx(1.1)
    assert info["score"] == 1.0, "score stays F1 in [0, 1]; the bonus is in the reward"


def test_no_format_bonus_for_a_wrong_answer_or_a_broken_turn(env: KBQAEnv) -> None:
    trace = run(env, ONE_HOP, ["<think>guess</think><answer>m.0000000000</answer>"])
    assert trace[-1][1] == 0.0 and trace[-1][4]["format_ok"]
    actions, _ = expert(env, ONE_HOP)
    mixed = [f"<think>x</think><action>{a}</action>" for a in actions[:-1]] + [actions[-1]]
    assert run(env, ONE_HOP, mixed)[-1][1] == 1.0


def test_parse_forms() -> None:
    assert parse("<answer>#3</answer>") == Action("answer", ("#3",), tagged=False)
    assert parse("<think>a</think><answer>#3</answer>") == Action("answer", ("#3",), tagged=True)
    assert parse("  find_RELATION [ #0 |  ~directed_by ] ") == Action(
        "find_relation", ("#0", "~directed_by")
    )
    assert parse("Answer[m.1 | m.2]") == Action("answer", ("m.1 | m.2",))
    assert isinstance(parse("Count[#0] Count[#1]"), ParseError)


def test_answer_scoring_partial_and_best_gold(env: KBQAEnv) -> None:
    s = score(["a", "x"], [["a", "b"], ["a", "x", "y"]])
    assert s.gold_index == 1 and s.f1 == pytest.approx(0.8) and s.hits1 == 1.0 and s.em == 0.0
    assert score(["3.0"], [["3"]]).em == 1.0 and score([], [["a"]]).f1 == 0.0
    task = env.suite["kbqa-metaqa-2hop-test-00000"]
    gold = task.gold["answers"][0]
    *_, (_, reward, _, _, info) = run(env, task, [f"Answer[{gold[0]}, m.0000000000]"])
    assert info["hits1"] == 1.0 and info["em"] == 0.0 and not info["success"]
    assert reward == pytest.approx(score([gold[0], "m.0000000000"], [gold]).f1)


def test_turn_limit_truncates_with_score_zero(env: KBQAEnv) -> None:
    task = env.suite[ONE_HOP]
    limit = task.config["max_turns"]
    trace = run(env, task, [f"Get_relations[{task.config['entities'][0]['id']}]"] * limit)
    assert len(trace) == limit + 1
    *_, (obs, reward, terminated, truncated, info) = trace
    assert (
        truncated
        and not terminated
        and reward == 0.0
        and info["score"] == 0.0
        and not info["success"]
    )
    assert "Out of turns" in obs and env.step("Answer[#0]")[4]["valid"] is False


# ------------------------------------------------------------ determinism, snapshot, contract
def test_determinism_and_expert_after_detours(env: KBQAEnv, suites: dict[str, TaskSuite]) -> None:
    task = suites["comp-test"].tasks[310]
    actions, _ = expert(env, task)
    detour = [
        f"Find_relation[{task.config['entities'][0]['id']} | has_genre]",
        "nonsense",
        *actions,
    ]
    first = run(env, task, detour)
    assert first == run(KBQAEnv(), task, detour)
    env.reset(seed=0, options={"task": task})
    env.step(detour[0])
    env.step(detour[1])
    while True:  # the expert renumbers its plan onto results the agent already made
        *_, terminated, truncated, info = env.step(env.expert_action())
        if terminated or truncated:
            break
    assert info["success"]


def test_snapshot_restore(env: KBQAEnv, suites: dict[str, TaskSuite]) -> None:
    task = suites["comp-test"].tasks[620]
    actions, _ = expert(env, task)
    env.reset(seed=0, options={"task": task})
    env.step(actions[0])
    snap = env.snapshot()
    rest = [env.step(a)[:4] for a in actions[1:]]
    env.reset(seed=0, options={"task": ONE_HOP})
    for _ in range(2):
        env.restore(snap)
        assert [env.step(a)[:4] for a in actions[1:]] == rest


def test_bad_tasks_are_rejected(env: KBQAEnv) -> None:
    task = env.suite[ONE_HOP]
    with pytest.raises(ValidationError, match="every gold answer set needs at least one id"):
        KBQAEnv.validate_task(task.model_copy(update={"gold": {**task.gold, "answers": [[]]}}))
    with pytest.raises(ValidationError, match="unclosed"):
        KBQAEnv.validate_task(task.model_copy(update={"gold": {**task.gold, "sexpr": "(JOIN x"}}))
    with pytest.raises(ValidationError, match="entities"):
        KBQAEnv.validate_task(task.model_copy(update={"config": {**task.config, "entities": []}}))
    with pytest.raises(ResetNeeded):
        KBQAEnv().expert_action()


def test_registered_and_conformant() -> None:
    from agentgym.testing import check_env

    env = agentgym.make("KBQA-v0")
    obs, info = env.reset(seed=1)
    assert obs.startswith("Question: ") and info["task_id"].startswith("kbqa-metaqa-")
    check_env(env, tasks=[ONE_HOP, "kbqa-metaqa-2hop-test-00000"])
    check_env(
        KBQAEnv(suite=str(TASKS / "comp-test.jsonl")), tasks=["kbqa-comp-test-compositional-00001"]
    )


def test_doc_page_example_runs() -> None:
    import doctest

    import agentgym.envs.kbqa

    assert doctest.testmod(agentgym.envs.kbqa).failed == 0


def test_handles_option_names_topic_entities_and_keeps_ids_working(
    suites: dict[str, TaskSuite],
) -> None:
    """``handles=True``: ``@k`` for the k-th topic entity in actions, reference and expert;
    ids still accepted; an unknown handle is explained; off by default (KBQA-R1's setting)."""
    task = suites["comp-test"].filter(["compositional"]).tasks[0]
    plain, handled = KBQAEnv(), KBQAEnv(handles=True)
    obs, info = handled.reset(seed=0, options={"task": task})
    ids = [e["id"] for e in task.config["entities"]]
    assert info["entities"] == ids and info["entity_refs"] == ["@1", "@2"]
    assert f"@1 = {task.config['entities'][0]['name']} ({ids[0]})" in obs
    reference = handled.reference_actions()
    assert not any(i in a for a in reference for i in ids)
    assert reference[0].startswith("Find_relation[@1 |")
    assert [a.replace("@1", ids[0]).replace("@2", ids[1]) for a in reference] == (
        plain.reset(seed=0, options={"task": task}) and plain.reference_actions()
    )
    assert plain.reset(seed=0, options={"task": task})[1]["entity_refs"] == ids
    bad = handled.step("Find_relation[@3 | ~starred_actors]")
    assert not bad[4]["valid"] and "unknown topic entity @3" in bad[0] and "@1, @2" in bad[0]
    first = handled.step(f"Find_relation[{ids[0]} | ~starred_actors]")
    assert first[4]["valid"] and first[4]["result_ref"] == "#0"
    assert not plain.step("Find_relation[@1 | ~starred_actors]")[4]["valid"]


@pytest.mark.parametrize("name", SUITES)
def test_expert_solves_tasks_with_handles(name: str, suites: dict[str, TaskSuite]) -> None:
    env = KBQAEnv(handles=True)
    for task in suites[name].tasks[:: max(1, len(suites[name].tasks) // 40)]:
        actions, info = expert(env, task)
        assert info["f1"] == 1.0, (task.id, actions)
        assert not any(e["id"] in a for a in actions for e in task.config["entities"])
