"""Executes parsed actions against a :class:`KnowledgeBase`, producing numbered results.

Each operation returns an :class:`Outcome`: a new result (``#k``), relations to show, a final
answer, or an error that says what was wrong. The executor never raises on agent input. It works
on the KB's own sets (:func:`~agentgym.envs.kbqa.kb.node_sets`: integer arrays for the cached KB),
turned into string ids only to show a capped list, to answer, or when ``Result.ids`` is read.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Set
from dataclasses import dataclass

from agentgym.envs.kbqa.actions import CANONICAL, Action, answer_ids
from agentgym.envs.kbqa.kb import COMPARE_OPS, CompareOp, KnowledgeBase, node_sets

_REF = re.compile(r"#(\d+)")
_TIME = re.compile(r"(\d{4})(?:\s*-\s*(\d{4})|(s))?")


@dataclass(frozen=True)
class Result:
    """One numbered result: a set of ids, or a count (then ``ids`` is ``{str(count)}``)."""

    nodes: Set[str]
    """The ids in the KB's own set representation (what the executor computes with)."""
    count: int | None = None

    @functools.cached_property
    def ids(self) -> frozenset[str]:
        """The ids as a plain frozenset (built on first use)."""
        return self.nodes if isinstance(self.nodes, frozenset) else frozenset(self.nodes)


@dataclass(frozen=True)
class Outcome:
    """What one action did."""

    result: Result | None = None
    """A new numbered result (every operation but Get_relations and Answer)."""
    relations: dict[str, int] | None = None
    """Get_relations: relation -> how many of the entities have it."""
    answer: list[str] | None = None
    """Answer: the answered ids, in order."""
    error: str | None = None
    note: str = ""
    """Extra guidance shown with a valid result (e.g. an empty join in the wrong direction)."""


class _Bad(Exception):
    """Internal: an argument is wrong; the message goes to the agent."""


class Executor:
    """Runs KBQA-R1 actions on one KB. Stateless: results live in the caller's list."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self.sets = node_sets(kb)
        self._relations = set(kb.relation_names())
        self._types = set(kb.type_names())
        self._numeric = kb.numeric_relations()

    def run(self, action: Action, results: list[Result]) -> Outcome:
        """Execute ``action`` given the results so far; errors become ``Outcome.error``."""
        try:
            return getattr(self, f"_{action.op}")(results, *action.args)  # type: ignore[no-any-return]
        except _Bad as bad:
            return Outcome(error=f"{CANONICAL[action.op]}: {bad}")

    # ------------------------------------------------------------------ arguments
    def expr(self, text: str, results: list[Result]) -> Set[str]:
        """The ids of ``#k`` or of one entity id / literal."""
        ref = _REF.fullmatch(text)
        if ref:
            k = int(ref.group(1))
            if k >= len(results):
                have = f"#0 to #{len(results) - 1}" if results else "none yet"
                raise _Bad(f"there is no result #{k} (results so far: {have})")
            return results[k].nodes
        if self.kb.is_node(text):
            return self.sets.lift((text,))
        named = self.kb.find(text)
        hint = f" {text!r} is a name; its id is {named[0]}." if named else ""
        raise _Bad(f"unknown expression {text!r}: use a result (#0) or an entity id.{hint}")

    def relation(self, text: str) -> tuple[str, bool]:
        """``(name, reverse)`` of ``relation``, ``~relation`` or ``(R relation)``."""
        match = re.fullmatch(r"\(\s*R\s+(\S+)\s*\)", text)
        name, reverse = (
            (match.group(1), True) if match else (text.lstrip("~"), text.startswith("~"))
        )
        if name not in self._relations:
            raise _Bad(
                f"unknown relation {text!r}; relations: {', '.join(sorted(self._relations))}"
            )
        return name, reverse

    def numeric(self, text: str) -> str:
        name, reverse = self.relation(text)
        if reverse or name not in self._numeric:
            raise _Bad(
                f"{text!r} has no numeric values; numeric relations: {', '.join(self._numeric)}"
            )
        return name

    # ------------------------------------------------------------------ operations
    def _get_relations(self, results: list[Result], expr: str) -> Outcome:
        return Outcome(relations=self.sets.incident(self.expr(expr, results)))

    def _find_relation(self, results: list[Result], expr: str, relation: str) -> Outcome:
        ids = self.expr(expr, results)
        name, reverse = self.relation(relation)
        found = self.sets.follow(ids, name, reverse)
        note = ""
        if not found and self.sets.follow(ids, name, not reverse):
            other = name if reverse else f"~{name}"
            note = f"(these entities have {name} in the other direction: use {other})"
        return Outcome(result=Result(found), note=note)

    def _merge(self, results: list[Result], first: str, second: str) -> Outcome:
        ids = self.expr(first, results)
        if second in self._types and not _REF.fullmatch(second):
            return Outcome(result=Result(self.sets.with_type(ids, second)))
        try:
            other = self.expr(second, results)
        except _Bad as bad:
            raise _Bad(f"{bad} Types: {', '.join(sorted(self._types))}") from None
        return Outcome(result=Result(self.sets.intersect(ids, other)))

    def _order(self, results: list[Result], direction: str, expr: str, relation: str) -> Outcome:
        if direction.upper() not in ("MAX", "MIN"):
            raise _Bad(f"the first argument is MAX or MIN, not {direction!r}")
        ids, name = self.expr(expr, results), self.numeric(relation)
        best = self.sets.extreme(ids, name, largest=direction.upper() == "MAX")
        note = "" if best or not ids else f"(none of them has {name})"
        return Outcome(result=Result(best), note=note)

    def _compare(self, results: list[Result], op: str, relation: str, value: str) -> Outcome:
        if op.lower() not in COMPARE_OPS:
            raise _Bad(f"the operator is one of {', '.join(COMPARE_OPS)}, not {op!r}")
        name = self.numeric(relation)
        try:
            number = float(value)
        except ValueError:
            raise _Bad(f"value {value!r} is not a number") from None
        op_: CompareOp = op.lower()  # type: ignore[assignment]
        return Outcome(result=Result(self.sets.compare(name, op_, number)))

    def _time_constraint(self, results: list[Result], relation: str, time: str) -> Outcome:
        name = self.numeric(relation)
        match = _TIME.fullmatch(time)
        if match is None:
            raise _Bad(f"time is YYYY, YYYY-YYYY or a decade like 1990s, not {time!r}")
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else low + 9 if match.group(3) else low
        if high < low:
            raise _Bad(f"the time range {time!r} ends before it starts")
        return Outcome(result=Result(self.sets.between(name, low, high)))

    def _count(self, results: list[Result], expr: str) -> Outcome:
        n = len(self.expr(expr, results))
        return Outcome(result=Result(frozenset((str(n),)), count=n))

    def _answer(self, results: list[Result], argument: str) -> Outcome:
        ids: list[str] = []
        for token in answer_ids(argument):
            if _REF.fullmatch(token):
                ids += self.sets.ordered(self.expr(token, results))
            else:
                ids.append(token)
        return Outcome(answer=list(dict.fromkeys(ids)))

    # ------------------------------------------------------------------ display
    def show(self, result: Result, limit: int = 20) -> str:
        """A result as text: the count, or up to ``limit`` entities ``Label (id)`` and the total."""
        if result.count is not None:
            return f"{result.count} (a count)"
        total = len(result.nodes)
        if not total:
            return "0 entities"
        shown = [self._item(n) for n in self.sets.ordered(result.nodes, limit)]
        more = f"; ... ({total - limit} more)" if total > limit else ""
        noun = "entity" if total == 1 else "entities"
        return f"{total} {noun}: {'; '.join(shown)}{more}"

    def _item(self, node: str) -> str:
        label = self.kb.label(node)
        return label if label == node else f"{label} ({node})"
