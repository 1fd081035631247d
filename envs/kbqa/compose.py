"""Generated compositional questions over the KB, one template per operator combination.

Each template draws real entities, writes a MetaQA-style question (topic entities in [brackets])
and a gold S-expression, and keeps the draw only when every constraint matters (an intersection
smaller than both sides, a comparison that removes some movies...). Gold answers come from
executing the S-expression with the env's executor.

Splits follow GrailQA: ``iid`` (seen templates and relations, new questions), ``compositional``
(templates that combine seen operators in unseen ways) and ``zero-shot`` (relations never seen in
the training templates).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass

from agentgym.envs.kbqa.kb import KnowledgeBase

PHRASES = {
    "directed_by": "directed by [{}]",
    "written_by": "written by [{}]",
    "starred_actors": "starring [{}]",
    "has_genre": "in the genre [{}]",
    "in_language": "in the language [{}]",
    "has_tags": "tagged [{}]",
}
"""Movie relation -> how a question says it."""
PEOPLE = {"directed_by": "director", "written_by": "writer", "starred_actors": "actor"}
"""Relations whose objects are people, with the people's type."""
TRAIN_RELATIONS = ("directed_by", "starred_actors", "has_genre")
ZERO_SHOT_RELATIONS = ("written_by", "in_language", "has_tags")
YEAR = "release_year"
COMPARE_WORDS = {"gt": "after", "ge": "in or after", "lt": "before", "le": "in or before"}
MAX_ANSWERS = 50
"""Set answers larger than this are redrawn (a person can still read the answer)."""


@dataclass(frozen=True)
class Draft:
    """A drawn question before its gold answers are executed."""

    template: str
    question: str
    sexpr: str
    entities: tuple[tuple[str, str], ...]
    """(id, name) of each topic entity."""
    relations: tuple[str, ...]


class _Draw:
    """Random draws of real KB facts for one template instance."""

    def __init__(self, kb: KnowledgeBase, rng: random.Random, relations: tuple[str, ...]) -> None:
        self.kb, self.rng, self.relations = kb, rng, relations

    def anchor(self, people_only: bool = True) -> tuple[str, str, frozenset[str]]:
        """A relation, an object of it, and the movies with that object (2 to 300 of them)."""
        pool = [r for r in self.relations if r in PEOPLE] if people_only else list(self.relations)
        relation = self.rng.choice(pool or list(self.relations))
        for _ in range(50):
            movie = self.rng.choice(self.movies())
            objects = sorted(self.kb.follow([movie], relation, False))
            if not objects:
                continue
            obj = self.rng.choice(objects)
            movies = self.kb.follow([obj], relation, True)
            if 2 <= len(movies) <= 300:
                return relation, obj, movies
        raise _Retry

    def movies(self) -> list[str]:
        return _movies(self.kb)

    def years(self, movies: frozenset[str]) -> list[float]:
        return sorted({v for vs in self.kb.values(movies, YEAR).values() for v in vs})

    def phrase(self, relation: str, node: str) -> str:
        return PHRASES[relation].format(self.kb.label(node))


@functools.lru_cache(maxsize=2)
def _movies(kb: KnowledgeBase) -> list[str]:
    return sorted(kb.of_type("movie"))


class _Retry(Exception):
    """This draw does not make a good question; draw again."""


def _join(relation: str, node: str) -> str:
    return f"(JOIN {relation} {node})"


def _pair(d: _Draw) -> tuple[str, str, str, str, frozenset[str]]:
    """Two constraints on movies whose intersection is non-empty and smaller than both."""
    r1, e1, s1 = d.anchor()
    movie = d.rng.choice(sorted(s1))
    r2 = d.rng.choice([r for r in d.relations if r != r1])
    objects = sorted(d.kb.follow([movie], r2, False))
    if not objects:
        raise _Retry
    e2 = d.rng.choice(objects)
    s2 = d.kb.follow([e2], r2, True)
    both = s1 & s2
    if both in (s1, s2):
        raise _Retry
    return r1, e1, r2, e2, both


# ---------------------------------------------------------------------------- templates
def t_and(d: _Draw) -> Draft:
    r1, e1, r2, e2, both = _pair(d)
    if len(both) > MAX_ANSWERS:
        raise _Retry
    q = f"which movies are {d.phrase(r1, e1)} and {d.phrase(r2, e2)}"
    return Draft("and", q, f"(AND {_join(r1, e1)} {_join(r2, e2)})", _ents(d, e1, e2), (r1, r2))


def t_count(d: _Draw) -> Draft:
    r1, e1, _ = d.anchor(people_only=False)
    q = f"how many movies are {d.phrase(r1, e1)}"
    return Draft("count", q, f"(COUNT {_join(r1, e1)})", _ents(d, e1), (r1,))


def t_argmax(d: _Draw) -> Draft:
    r1, e1, s1 = d.anchor()
    if len(d.years(s1)) < 2:
        raise _Retry
    op, word = d.rng.choice([("ARGMAX", "most recent"), ("ARGMIN", "earliest")])
    q = f"what is the {word} movie {d.phrase(r1, e1)}"
    return Draft(op.lower(), q, f"({op} {_join(r1, e1)} {YEAR})", _ents(d, e1), (r1, YEAR))


def _threshold(d: _Draw, s1: frozenset[str]) -> tuple[str, int]:
    years = d.years(s1)
    if len(years) < 3:
        raise _Retry
    op = d.rng.choice(sorted(COMPARE_WORDS))
    return op, int(d.rng.choice(years[1:-1]))


def t_compare(d: _Draw) -> Draft:
    r1, e1, s1 = d.anchor()
    op, year = _threshold(d, s1)
    q = f"which movies {d.phrase(r1, e1)} were released {COMPARE_WORDS[op]} {year}"
    sx = f"(AND {_join(r1, e1)} ({op} {YEAR} {year}))"
    return Draft(f"compare-{op}", q, sx, _ents(d, e1), (r1, YEAR))


def _decade(d: _Draw, s1: frozenset[str]) -> int:
    decades = sorted({int(y) // 10 * 10 for y in d.years(s1)})
    if len(decades) < 2:
        raise _Retry
    return int(d.rng.choice(decades))


def t_tc(d: _Draw) -> Draft:
    r1, e1, s1 = d.anchor()
    decade = _decade(d, s1)
    q = f"which movies {d.phrase(r1, e1)} were released in the {decade}s"
    sx = f"(TC {_join(r1, e1)} {YEAR} {decade}-{decade + 9})"
    return Draft("time", q, sx, _ents(d, e1), (r1, YEAR))


def t_type(d: _Draw) -> Draft:
    r1, e1, s1 = d.anchor()
    people = [r for r in d.relations if r in PEOPLE]
    if not people:
        raise _Retry
    r2 = d.rng.choice(people)
    kind = d.rng.choice([t for t in PEOPLE.values() if t != PEOPLE[r2]])
    people = d.kb.follow(s1, r2, False)
    found = d.kb.with_type(people, kind)
    if not found or found == people or len(found) > MAX_ANSWERS:
        raise _Retry
    q = f"which {PEOPLE[r2]}s of the movies {d.phrase(r1, e1)} are also {kind}s"
    sx = f"(AND {kind} (JOIN (R {r2}) {_join(r1, e1)}))"
    return Draft("type", q, sx, _ents(d, e1), (r1, r2))


def c_count_and(d: _Draw) -> Draft:
    r1, e1, r2, e2, _ = _pair(d)
    q = f"how many movies are {d.phrase(r1, e1)} and {d.phrase(r2, e2)}"
    sx = f"(COUNT (AND {_join(r1, e1)} {_join(r2, e2)}))"
    return Draft("count+and", q, sx, _ents(d, e1, e2), (r1, r2))


def c_argmax_and(d: _Draw) -> Draft:
    r1, e1, r2, e2, both = _pair(d)
    if len(d.years(both)) < 2:
        raise _Retry
    q = f"what is the most recent movie {d.phrase(r1, e1)} and {d.phrase(r2, e2)}"
    sx = f"(ARGMAX (AND {_join(r1, e1)} {_join(r2, e2)}) {YEAR})"
    return Draft("argmax+and", q, sx, _ents(d, e1, e2), (r1, r2, YEAR))


def c_count_compare(d: _Draw) -> Draft:
    r1, e1, s1 = d.anchor()
    op, year = _threshold(d, s1)
    q = f"how many movies {d.phrase(r1, e1)} were released {COMPARE_WORDS[op]} {year}"
    sx = f"(COUNT (AND {_join(r1, e1)} ({op} {YEAR} {year})))"
    return Draft("count+compare", q, sx, _ents(d, e1), (r1, YEAR))


def c_count_tc(d: _Draw) -> Draft:
    r1, e1, s1 = d.anchor()
    decade = _decade(d, s1)
    q = f"how many movies {d.phrase(r1, e1)} were released in the {decade}s"
    sx = f"(COUNT (TC {_join(r1, e1)} {YEAR} {decade}-{decade + 9}))"
    return Draft("count+time", q, sx, _ents(d, e1), (r1, YEAR))


def _ents(d: _Draw, *nodes: str) -> tuple[tuple[str, str], ...]:
    return tuple((n, d.kb.label(n)) for n in nodes)


Template = Callable[[_Draw], Draft]
SEEN: tuple[Template, ...] = (t_and, t_count, t_argmax, t_compare, t_tc, t_type)
"""Templates of the training split (and of the i.i.d. and zero-shot test splits)."""
UNSEEN: tuple[Template, ...] = (c_count_and, c_argmax_and, c_count_compare, c_count_tc)
"""Operator combinations that appear only in the compositional test split."""


def draw(
    kb: KnowledgeBase,
    rng: random.Random,
    template: Template,
    relations: tuple[str, ...],
    must_use: tuple[str, ...] = (),
) -> Draft:
    """One draft of ``template`` over ``relations``; with ``must_use``, it uses one of those."""
    d = _Draw(kb, rng, relations)
    for _ in range(200):
        try:
            draft = template(d)
        except _Retry:
            continue
        if not must_use or set(draft.relations) & set(must_use):
            return draft
    raise RuntimeError(f"template {template.__name__} found no question over {relations}")
