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
relation satisfies them if any value does. ``Order`` keeps all ties.

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

>>> import agentgym
>>> env = agentgym.make("KBQA-v0")
>>> obs, info = env.reset(seed=0, options={"task": "kbqa-metaqa-1hop-test-00000"})
>>> env.step(env.unwrapped.expert_action())[4]["valid"]
True
"""

from agentgym.envs.kbqa.env import Entity, KBQAConfig, KBQAEnv, KBQAGold, KBQAState
from agentgym.envs.kbqa.kb import CachedKB, KnowledgeBase, SQLiteKB, open_kb

__all__ = [
    "CachedKB",
    "Entity",
    "KBQAConfig",
    "KBQAEnv",
    "KBQAGold",
    "KBQAState",
    "KnowledgeBase",
    "SQLiteKB",
    "open_kb",
]
