"""Candidate items, the task config that holds them, and the yes/no question arithmetic.

Everything compares text through :func:`norm` (case- and whitespace-insensitive), because agents
write ``ask[Color = Blue]`` as often as ``ask[color=blue]``; what is shown keeps the data's
spelling.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Question = tuple[str, str]
"""``(attribute, value)``, both normalised with :func:`norm`."""

Answer = Literal["yes", "no", "unknown"]
"""What the user says: ``unknown`` when the item has no recorded value for the attribute."""


def norm(text: str) -> str:
    """Lower-case ``text`` and collapse its whitespace: the form every comparison uses."""
    return " ".join(text.split()).lower()


class Item(BaseModel):
    """One thing the user might want: a product variant or a movie."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    """Stable identifier the agent may answer with (a tau2 ``item_id``, a movie slug)."""
    name: str = Field(min_length=1)
    """Display name the agent may also answer with, e.g. ``T-Shirt (color: blue, size: M)``."""
    attributes: dict[str, list[str]]
    """Attribute name -> values (multi-valued: a movie has several actors). Names are normalised."""

    @field_validator("attributes")
    @classmethod
    def _normalise_names(cls, attributes: dict[str, list[str]]) -> dict[str, list[str]]:
        """Store attribute names in :func:`norm` form: ``Color`` and ``color`` are one attribute."""
        out: dict[str, list[str]] = {}
        for name, values in attributes.items():
            key = norm(name)
            if not key or "=" in key or "[" in key or "]" in key:
                raise ValueError(
                    f"attribute name {name!r} must be non-empty and free of '=', '[', ']'"
                )
            if key in out:
                raise ValueError(f"attribute {name!r} is given twice (names are case-insensitive)")
            if any(not norm(v) for v in values):
                raise ValueError(f"attribute {name!r} has an empty value")
            out[key] = list(values)
        return out

    def answer(self, attribute: str, value: str) -> Answer:
        """Truthful answer to "is ``attribute`` ``value``?" (both in :func:`norm` form).

        ``unknown`` when the item has no value for the attribute at all: the data is silent (83% of
        MetaQA films have no language), so "no" would be a lie.
        """
        values = self.attributes.get(attribute)
        if not values:
            return "unknown"
        return "yes" if any(norm(v) == value for v in values) else "no"

    def signature(self) -> frozenset[Question]:
        """Every (attribute, value) true of the item; equal signatures = indistinguishable.

        (Attributes are all-or-nothing per item, so equal signatures also mean equal "unknown"s.)
        """
        return frozenset((a, norm(v)) for a, values in self.attributes.items() for v in values)

    def describe(self, shown: str = "") -> str:
        """One line of attributes, e.g. ``color: blue; size: M``, leaving out those whose values
        all appear in ``shown`` already (a product's name lists its options)."""
        return "; ".join(
            f"{a}: {', '.join(vs)}"
            for a, vs in self.attributes.items()
            if vs and not all(re.search(rf"(?<!\w){re.escape(v)}(?!\w)", shown) for v in vs)
        )


class ClarifyConfig(BaseModel):
    """``Task.config`` of ``agentgym/Clarify-v0``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    domain: Literal["products", "movies"]
    """Which kind of items the candidates are (used in the prompt)."""
    candidates: list[Item] = Field(min_length=2)
    """The items the user might want; the target is one of them (``Task.gold['target']``)."""
    max_turns: int = Field(ge=1)
    """Actions allowed (questions, answers and invalid actions all count)."""
    question_penalty: float = Field(default=0.0, ge=0.0, le=1.0)
    """Reward lost per question asked: reward = max(0, 1 - question_penalty * questions)."""

    @model_validator(mode="after")
    def _check_candidates(self) -> ClarifyConfig:
        """Ids and names must identify one candidate each, and every pair must be separable."""
        _check_unique([c.id for c in self.candidates], "candidate ids")
        _check_unique([c.name for c in self.candidates], "candidate names")
        ids, names = (
            {norm(c.id): c for c in self.candidates},
            {norm(c.name): c for c in self.candidates},
        )
        for key in ids.keys() & names.keys():
            if ids[key] is not names[key]:
                raise ValueError(
                    f"id of {ids[key].id!r} equals the name of {names[key].id!r}: "
                    "answers are ambiguous"
                )
        for a, b in combinations(self.candidates, 2):
            if a.signature() == b.signature():
                raise ValueError(
                    f"candidates {a.id!r} and {b.id!r} have the same attributes, "
                    "so no yes/no question can tell them apart"
                )
        return self


def _check_unique(values: Sequence[str], what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if norm(value) in seen:
            raise ValueError(f"{what} must be unique (case-insensitive); {value!r} is repeated")
        seen.add(norm(value))


def questions(items: Iterable[Item]) -> dict[Question, str]:
    """Every question about a value some item has -> its display value (data spelling), sorted."""
    shown: dict[Question, str] = {}
    for item in items:
        for attribute, values in item.attributes.items():
            for value in values:
                key = (attribute, norm(value))
                shown[key] = min(shown.get(key, value), value)
    return dict(sorted(shown.items()))


def best_question(items: Sequence[Item]) -> Question | None:
    """The question whose largest answer group is smallest (ties: smallest (attribute, value)).

    None when no question separates them (zero or one item left). Only questions that split the
    items into at least two answer groups qualify, so the expert never wastes a turn.
    """
    best: tuple[int, Question] | None = None
    for question in questions(items):
        largest = max(Counter(item.answer(*question) for item in items).values())
        if largest < len(items) and (best is None or largest < best[0]):
            best = (largest, question)
    return best[1] if best else None
