"""Clarify: find out which item a user wants by asking yes/no questions ("20 questions").

A simulated user wants one item from a list of candidates but has not said which. The agent asks
yes/no questions about attributes (``ask[color=blue]``), the user answers truthfully from the
item's real attributes, and the agent names the item (``answer[9612497925]``). Under-specified
requests are the norm with real users; this env measures whether an agent asks before acting and
how efficiently it narrows the options.

=====================  =========================================================================
Id                     ``agentgym/Clarify-v0`` (``agentgym.make("Clarify-v0")``)
Class                  :class:`agentgym.envs.clarify.env.ClarifyEnv`
Actions                text, case- and whitespace-insensitive: ``ask[attribute=value]`` or
                       ``answer[item]`` (a candidate's id or exact name);
                       ``info["available_actions"]`` lists every sensible one
Observations           text: first the instruction, every candidate (id, name, attributes), the
                       askable attributes, the syntax and the turn limit; then ``Yes.``/``No.``/
                       ``I don't know.``, or
                       a message saying what was wrong and what is allowed
Reward                 on a correct answer ``max(0, 1 - question_penalty * questions)`` (penalty 0
                       in the built-in suites, so 1.0); 0 for a wrong answer or running out of turns
Episode end            ``answer[...]`` terminates; reaching ``max_turns`` truncates. Every action,
                       valid or not, uses a turn. Final ``info`` has ``success`` and ``score``
Turn limit             per task: the expert's questions + 1 (the answer) + 4 turns of slack
Splits                 ``clarify/train`` 500 tasks, ``clarify/test`` 200 tasks; half products,
                       half movies; 6-16 candidates (tags ``easy`` 6-8, ``medium`` 9-12,
                       ``hard`` 13-16); test targets never occur as train targets
Expert                 ``expert_action()``: the question that splits the candidates still
                       consistent with the answers most evenly; answers when one is left
                       (4.7 turns on average on ``clarify/test``; 100% success)
Random baseline        uniform over ``available_actions``: about 10% success on ``clarify/test``
Data                   products: the 591 variants of tau2-bench retail ``db.json`` (MIT);
                       movies: 9,067 films of the MetaQA knowledge base (Creative Commons). See
                       ``tasks/clarify/manifest.json`` and the licence files beside it
Regenerate             ``python -m agentgym.envs.clarify.generate --data ../shared/data``
=====================  =========================================================================

Config (``Task.config``, validated by :class:`ClarifyConfig`): ``domain`` (``products`` or
``movies``), ``candidates`` (at least 2 items ``{id, name, attributes: {name: [values]}}``, ids and
names unique, every pair separable by some question), ``max_turns``, ``question_penalty``.
Gold (``Task.gold``): ``{"target": <candidate id>}``.

Answers follow the data literally: "Yes." iff the target's list for that attribute contains the
value (case-insensitive), "No." if the list holds other values, and "I don't know." if the target
has no value recorded for it (83% of MetaQA films have no language; a product type without sizes
has no size): a simulated user must not invent a "no" the data does not support. The expert's
question minimises the largest of the three answer groups. Asking about an attribute no candidate
has is invalid.

>>> import agentgym
>>> env = agentgym.make("Clarify-v0")
>>> obs, info = env.reset(seed=0, options={"task": "clarify-products-test-0000"})
>>> env.step("ask[product=Bookshelf]")[0]
'Yes.'
"""

from agentgym.envs.clarify.env import ClarifyEnv, ClarifyGold, ClarifyState
from agentgym.envs.clarify.items import ClarifyConfig, Item

__all__ = ["ClarifyConfig", "ClarifyEnv", "ClarifyGold", "ClarifyState", "Item"]
