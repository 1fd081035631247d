"""``KBQAEnv``: answer a question by running KBQA-R1 actions against a knowledge base.

The full rules: :class:`KBQAEnv`'s card. The KB is opened (and on first use built into the
user cache) at the first ``reset``, never on import, and shared by every env of the process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from agentgym.env import ResetNeeded, StepResult, TextEnv
from agentgym.envs.kbqa import sexpr
from agentgym.envs.kbqa.actions import CANONICAL, GRAMMAR, Action, ParseError, parse
from agentgym.envs.kbqa.executor import Executor, Outcome, Result
from agentgym.envs.kbqa.kb import KnowledgeBase, open_kb
from agentgym.envs.kbqa.prompt import SYSTEM_PROMPT, information
from agentgym.envs.kbqa.scoring import Score, reward, score
from agentgym.task import Task


class Entity(BaseModel):
    """A topic entity given with the question."""

    id: str = Field(min_length=1)
    name: str


class KBQAConfig(BaseModel):
    """``Task.config`` of ``agentgym/KBQA-v0``."""

    question: str = Field(min_length=1)
    """The question; topic entities appear in [brackets] as in MetaQA."""
    entities: list[Entity] = Field(min_length=1)
    """Topic entities (id and name) the agent starts from."""
    kb: Literal["metaqa"] = "metaqa"
    """Which knowledge base the question is about."""
    max_turns: int = Field(default=10, ge=1, le=100)
    """Actions allowed, valid or not; the last one should be the answer."""
    max_shown: int = Field(default=20, ge=1)
    """Entities listed per result (the total is always given)."""


class KBQAGold(BaseModel):
    """``Task.gold``: the logical form and the gold answer sets (F1 takes the best)."""

    sexpr: str
    answers: list[list[str]] = Field(min_length=1)
    exclude: list[str] = Field(default_factory=list)
    """Ids that are never answers: dropped from the agent's answer before scoring and absent from
    every gold set. MetaQA tasks list their topic entity (MetaQA's answers exclude it); the
    compositional tasks list none. See :mod:`agentgym.envs.kbqa.scoring`."""

    @field_validator("sexpr")
    @classmethod
    def _parses(cls, text: str) -> str:
        sexpr.parse(text)
        return text

    @field_validator("answers")
    @classmethod
    def _non_empty(cls, answers: list[list[str]]) -> list[list[str]]:
        if not all(answers):
            raise ValueError("every gold answer set needs at least one id")
        return answers

    @model_validator(mode="after")
    def _excluded_not_in_gold(self) -> KBQAGold:
        excluded = set(self.exclude)
        if any(excluded & set(gold) for gold in self.answers):
            raise ValueError("an excluded id is in a gold answer set")
        return self


@dataclass
class KBQAState:
    """Everything that changes during an episode (snapshot copies exactly this)."""

    results: list[Result] = field(default_factory=list)
    turn: int = 0
    format_ok: bool = True
    """Every turn so far followed the tagged format."""
    answer: list[str] | None = None
    score: Score | None = None
    terminated: bool = False
    truncated: bool = False


class KBQAEnv(TextEnv):
    """KBQA: answer questions by running KBQA-R1's actions against a knowledge base.

    The agent gets a question and its topic entity ids, issues structured KB operations (joins,
    intersections, argmax, comparisons, time constraints, counts), reads the numbered results, and
    answers with a set of entity ids. As in KBQA-R1 (Sun et al., 2025), the reward is answer-set F1
    with a 0.1 bonus for keeping the tagged format, and the gold S-expression of each task doubles as
    the reference for Referenced Rejection Sampling (``agentgym.agents.kbqa_r1``).

    =====================  =========================================================================
    Id                     ``agentgym/KBQA-v0`` (``agentgym.make("KBQA-v0")``)
    Class                  :class:`agentgym.envs.kbqa.env.KBQAEnv`
    Actions                ``Get_relations[expr]``, ``Find_relation[expr | relation]`` (``~relation``
                           follows it backwards), ``Merge[exprA | exprB or type]``,
                           ``Order[MAX|MIN | expr | relation]``,
                           ``Compare[lt|le|gt|ge|eq|ne | relation | value]``,
                           ``Time_constraint[relation | YYYY or YYYY-YYYY]``, ``Count[expr]``,
                           ``Answer[expr or ids]``; ``expr`` is ``#k`` or an entity id. Bare, or in
                           KBQA-R1's tags ``<think>..</think><action>..</action>`` /
                           ``<answer>..</answer>``
    Observations           first the question, topic entity ids, relations and types; then
                           ``<information>#k = ...: N entities: Label (id); ...</information>`` (20
                           shown, total given), relation lists, or an error that shows the grammar
    Reward                 on ``Answer``: F1 of the answer set (less ``gold.exclude``: MetaQA's
                           topic entity) against the best gold set, + 0.1 if
                           F1 > 0 and every turn used the tagged format; 0 otherwise. Final info has
                           ``score`` (= F1), ``success`` (exact match), ``f1``, ``hits1``, ``em``,
                           ``format_ok``
    Episode end            ``Answer`` terminates; ``max_turns`` (per task: reference length + 4)
                           truncates with score 0. Every turn counts, valid or not
    Knowledge base         the MetaQA movie KB (130,172 triples, 9 relations, 42,881 nodes) in SQLite,
                           built once into ``~/.cache/agentgym/kbqa`` (keyed by the source sha256), with
                           its numpy graph cached beside it (``*.graph-v3.npz``);
                           entity ids ``m.<10 hex>`` of the name, years are literals (``1999``)
    Splits                 ``kbqa/metaqa-train`` 4,000 (MetaQA dev, 1-hop + 2-hop, every question
                           type in MetaQA's proportions), ``kbqa/metaqa-test`` 2,000 (MetaQA
                           test, likewise), ``kbqa/comp-train`` 1,500,
                           ``kbqa/comp-test`` 900 (``iid``, ``compositional``, ``zero-shot``, 300 each)
    Expert                 ``expert_action()``: the gold S-expression compiled into actions,
                           renumbered onto the episode's results; F1 = 1 on every task
    Data                   MetaQA (Creative Commons): ``data/metaqa/`` and ``tasks/kbqa/`` licence
                           notices; sampling recorded in ``tasks/kbqa/manifest.json``
    Regenerate             ``python -m agentgym.envs.kbqa.generate --data ../shared/data``
    =====================  =========================================================================

    Env option ``handles`` (``agentgym.make("KBQA-v0", handles=True)``, default off): topic entities
    are listed as ``@1 = Name (id)`` and every action may write ``@k`` for the k-th topic entity (ids
    still work); reference actions and the expert use the handles, and ``info["entity_refs"]`` at reset
    lists them (it lists the ids when off). It spares a model trained from scratch the copy of an opaque
    id it never produced in training (the trainer demo measured 0-4% on such copies); KBQA-R1's
    setting is the default.

    Config (``Task.config``, :class:`KBQAConfig`): ``question``, ``entities`` (``[{id, name}]``),
    ``kb`` (``metaqa``), ``max_turns``, ``max_shown``. Gold (``Task.gold``, :class:`KBQAGold`):
    ``sexpr`` (GrailQA-style: ``JOIN``, ``R``, ``AND``, ``COUNT``, ``ARGMAX``/``ARGMIN``, ``lt``...
    ``ne``, ``TC``), ``answers`` (a list of gold id sets; F1 takes the best) and ``exclude`` (ids
    that are never answers; MetaQA tasks list their topic entity).

    Semantics: ``Find_relation[X | r]`` maps subjects to objects (a movie to its director),
    ``[X | ~r]`` objects to subjects. ``Compare`` and ``Time_constraint`` return every entity of the
    KB that satisfies them (GrailQA's ``lt``...), to be intersected with ``Merge``; a multi-valued
    relation satisfies them if any value does. ``Order`` keeps all ties. On MetaQA the one
    relation to rank by is ``release_year``: ``has_imdb_rating`` is categorical there (good, bad,
    fantastic), so an ``ARGMAX`` over it has nothing numeric to order.

    MetaQA's answer rule: the topic entity is never an answer (an actor is not among their own
    co-stars, a movie not among the other movies of its director). A MetaQA task's gold set is the
    S-expression's result without the topic entity, and ``gold.exclude`` names it: scoring drops it
    from the agent's answer before F1, Hits@1 and EM, so an answer with the topic entity scores as the
    same answer without it (as in MetaQA's usual evaluation, which never counts the topic entity as a
    prediction), and an answer of only the topic entity scores 0. The final observation says when it
    was not counted. With this rule the KB reproduces every row of MetaQA's 1-hop and 2-hop files
    (dev 9,453 + 12,328, test 9,377 + 12,439), and each hop count of the MetaQA suites is sampled per
    question type in the file's proportions (all 13 1-hop and 21 2-hop types; counts in
    ``tasks/kbqa/manifest.json``). The compositional tasks exclude nothing.
    """

    action_max_tokens = 160
    demo_suite = "kbqa/metaqa-train"

    config_model = KBQAConfig
    default_suite = "kbqa/metaqa-test"
    system_prompt = SYSTEM_PROMPT

    config: KBQAConfig
    state: KBQAState

    def __init__(
        self,
        suite: Any = None,
        render_mode: str | None = None,
        kb: KnowledgeBase | None = None,
        handles: bool = False,
    ) -> None:
        super().__init__(suite, render_mode)
        if kb is not None and not all(hasattr(kb, m) for m in ("label", "is_node", "find")):
            raise ValueError(
                f"kb must be a KnowledgeBase object (from Python), got {kb!r}; a task's own "
                "config names its knowledge base (kb: metaqa)"
            )
        self._kb = kb
        self.handles = handles
        """Topic entities are also addressable as ``@1``, ``@2``... (off: KBQA-R1's setting)."""
        self._reference: list[str] = []
        self._reference_results: list[frozenset[str]] = []

    @classmethod
    def validate_task(cls, task: Task) -> KBQAConfig:
        """Validate the config and the gold (S-expression parses, answer sets non-empty)."""
        config = KBQAConfig.model_validate(task.config)
        KBQAGold.model_validate(task.gold)
        return config

    @property
    def kb(self) -> KnowledgeBase:
        """The KB of the current task (opened on first use)."""
        if self._kb is None:
            self._kb = open_kb(self.config.kb if self.config else "metaqa")
        return self._kb

    # ------------------------------------------------------------------ episode
    def _reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._rebuild(task)
        self.state = KBQAState()
        ids = [e.id for e in self.config.entities]
        refs = [f"@{i}" for i in range(1, len(ids) + 1)] if self.handles else ids
        return self._first_observation(), {"entities": ids, "entity_refs": refs}

    def _rebuild(self, task: Task) -> None:
        """The executor over the KB and the expert's plan of ``task``."""
        self.executor = Executor(self.kb)
        self._plan(task)

    def _plan(self, task: Task) -> None:
        """Compile the gold S-expression and execute it: the expert's plan (not episode state)."""
        gold = KBQAGold.model_validate(task.gold)
        self._gold = gold
        self._reference = sexpr.to_actions(gold.sexpr, self.kb.type_names())
        if self.handles:
            self._reference = [self._with_handles(a) for a in self._reference]
        results: list[Result] = []
        for text in self._reference[:-1]:
            action = self._resolve(_parsed(text))
            if isinstance(action, str):
                raise ValueError(f"task {task.id}: gold step {text!r}: {action}")
            outcome = self.executor.run(action, results)
            if outcome.result is None:
                raise ValueError(f"task {task.id}: gold step {text!r} failed: {outcome.error}")
            results.append(outcome.result)
        self._reference_results = [r.nodes for r in results]

    def _with_handles(self, action: str) -> str:
        """``action`` with every topic entity id written as its handle."""
        handles = {e.id: f"@{i}" for i, e in enumerate(self.config.entities, 1)}
        return re.sub(r"m\.[0-9a-f]{10}", lambda m: handles.get(m.group(0), m.group(0)), action)

    def _resolve(self, action: Action) -> Action | str:
        """``action`` with topic handles (``@k``) replaced by their ids; an error text for a
        handle the question lacks. Without handles the action is left to the executor."""
        if not self.handles:
            return action
        ids = [e.id for e in self.config.entities]
        bad = [
            h for a in action.args for h in re.findall(r"@\d+", a) if not 0 < int(h[1:]) <= len(ids)
        ]
        if bad:
            return (
                f"{CANONICAL[action.op]}: unknown topic entity {bad[0]}; this question has "
                f"{', '.join(f'@{i}' for i in range(1, len(ids) + 1))}"
            )
        args = tuple(re.sub(r"@(\d+)", lambda m: ids[int(m.group(1)) - 1], a) for a in action.args)
        return Action(action.op, args, action.tagged)

    def _first_observation(self) -> str:
        if self.handles:
            entities = "; ".join(
                f"@{i} = {e.name} ({e.id})" for i, e in enumerate(self.config.entities, 1)
            )
        else:
            entities = "; ".join(f"{e.name} ({e.id})" for e in self.config.entities)
        return "\n".join(
            [
                f"Question: {self.config.question}",
                f"Topic entities: {entities}",
                f"Knowledge base: {self.kb.name}. Relations: {', '.join(self.kb.relation_names())}."
                f" Types: {', '.join(self.kb.type_names())}.",
                f"Answer with entity ids. You have {self.config.max_turns} turns.",
            ]
        )

    def _step(self, action: str) -> StepResult:
        parsed = parse(action)
        if isinstance(parsed, ParseError):
            self.state.format_ok = False
            return self._advance(f"Error: {parsed.message}\nActions:\n{GRAMMAR}", {"valid": False})
        self.state.format_ok &= parsed.tagged
        resolved = self._resolve(parsed)
        if isinstance(resolved, str):
            return self._advance(f"Error: {resolved}", {"valid": False})
        outcome = self.executor.run(resolved, self.state.results)
        if outcome.error is not None:
            return self._advance(f"Error: {outcome.error}", {"valid": False})
        if outcome.answer is not None:
            return self._finish(outcome.answer)
        return self._advance(*self._show(parsed, outcome))

    def _show(self, action: Action, outcome: Outcome) -> tuple[str, dict[str, Any]]:
        if outcome.relations is not None:
            listed = ", ".join(f"{r} ({n})" for r, n in outcome.relations.items()) or "none"
            return f"Relations of {action.args[0]}: {listed}", {
                "valid": True,
                "relations": list(outcome.relations),
            }
        assert outcome.result is not None
        self.state.results.append(outcome.result)
        ref = f"#{len(self.state.results) - 1}"
        text = self.executor.show(outcome.result, self.config.max_shown)
        note = f" {outcome.note}" if outcome.note else ""
        return f"{ref} = {action}: {text}{note}", {
            "valid": True,
            "result_ref": ref,
            "result_size": len(outcome.result.nodes),
        }

    def _step_invalid(self, message: str) -> StepResult:
        """Non-text actions also use a turn, so a broken agent still hits the turn limit."""
        self.state.format_ok = False
        return self._advance(f"Error: {message}\nActions:\n{GRAMMAR}", {"valid": False})

    def _advance(self, observation: str, info: dict[str, Any]) -> StepResult:
        """Count the turn; out of turns, the episode ends unanswered (score 0)."""
        self.state.turn += 1
        info = {
            **info,
            "turn": self.state.turn,
            "turns_left": self.config.max_turns - self.state.turn,
        }
        if self.state.turn < self.config.max_turns:
            return information(observation), 0.0, False, False, info
        self.state.truncated = True
        text = f"{observation}\nOut of turns ({self.config.max_turns}): no answer was given."
        return information(text), 0.0, False, True, {**info, **self._final_info(0.0)}

    def _finish(self, answer: list[str]) -> StepResult:
        self.state.turn += 1
        self.state.answer, self.state.terminated = answer, True
        self.state.score = score(answer, self._gold.answers, self._gold.exclude)
        r = reward(self.state.score.f1, self.state.format_ok)
        info = {
            "valid": True,
            "turn": self.state.turn,
            "turns_left": self.config.max_turns - self.state.turn,
        }
        text = f"Answered {len(answer)} id(s). F1 {self.state.score.f1:.3f}."
        dropped = [x for x in self._gold.exclude if x in answer]
        if dropped:
            text += f" Not counted (the topic entity is never an answer): {', '.join(dropped)}."
        return information(text), r, True, False, {**info, **self._final_info(r)}

    def _final_info(self, r: float) -> dict[str, Any]:
        s = self.state.score
        f1 = s.f1 if s else 0.0
        return {
            "success": bool(s and s.em == 1.0),
            "score": f1,
            "f1": f1,
            "hits1": s.hits1 if s else 0.0,
            "em": s.em if s else 0.0,
            "format_ok": self.state.format_ok,
            "reward": r,
            "answer": list(self.state.answer or []),
        }

    # ------------------------------------------------------------------ oracle and hints
    def reference_actions(self) -> list[str]:
        """The gold S-expression as an action sequence (Referenced Rejection Sampling's hint)."""
        if self.task is None:
            raise ResetNeeded("call reset() before reference_actions()")
        return list(self._reference)

    def expert_action(self) -> str:
        """The next reference step, renumbered onto the results this episode already has."""
        if self.task is None:
            raise ResetNeeded("call reset() before expert_action()")
        mapping: dict[str, str] = {}
        have = [r.nodes for r in self.state.results]
        for i, ids in enumerate(self._reference_results):
            found = [k for k, h in enumerate(have) if h == ids]
            if not found:
                return _renumber(self._reference[i], mapping)
            mapping[f"#{i}"] = f"#{found[-1]}"
        return _renumber(self._reference[-1], mapping)


def _parsed(text: str) -> Action:
    action = parse(text)
    if isinstance(action, ParseError):
        raise ValueError(f"reference step {text!r} does not parse: {action.message}")
    return action


def _renumber(action: str, mapping: dict[str, str]) -> str:
    """Rewrite reference result numbers (``#i``) into this episode's numbers."""
    return re.sub(r"#\d+", lambda m: mapping.get(m.group(0), m.group(0)), action)
