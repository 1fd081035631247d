"""Tool use: serve a simulated user through a domain's tools (tau-bench, tau2-bench) and BFCL.

The agent is a customer-service agent: each turn it calls one tool of the domain or writes to the
user; a simulated user plays the customer from the task's scenario. Grading is the benchmarks'
own: the final database must hash equal to a fresh database after the gold actions, and what had
to be said must have been said. Tools, errors, outputs, hashes and rewards reproduce tau-bench and
tau2-bench (their ``Error: ...`` texts included); nothing in the data is "fixed".

=====================  =========================================================================
Ids                    ``TauRetail-v0``, ``TauAirline-v0``, ``TauMock-v0``, ``TauTelecom-v0``
                       (tau2-bench domains; telecom in ``telecom_env``),
                       ``TauBenchRetail-v0`` (tau-bench v1 retail on v1's own data), all
                       :class:`~agentgym.envs.tooluse.env.TauEnv`; ``BFCL-v0``
                       (:class:`~agentgym.envs.tooluse.bfcl.BFCLEnv`)
Actions                a tool call as JSON ``{"name": ..., "arguments": {...}}`` (also OpenAI
                       tool calls, a one-call list, fenced or ``<tool_call>`` JSON, arguments as a
                       JSON string), or plain text = a message to the user (tau-bench's
                       ``respond`` form is accepted too). Tool schemas: ``info["tools"]``
Observations           first the domain policy and the user's opening (after any earlier
                       conversation of the task); then the tool's output (``Error: ...`` on
                       failure) or the user's reply; ``info["source"]`` says which
Users                  ``user="gold"`` (default, offline, tau2's protocol: opens with its
                       request only, gives its identity (``known_info``) when asked, never
                       reveals the rest of its scenario; plays its side of the gold path,
                       calling its own tools; confirms; says ``###STOP###`` once the gold
                       outcome is reached), ``"uncooperative"`` (offline: withholds everything,
                       refuses, gives up), ``"llm:<model spec>"`` or an
                       :class:`~agentgym.envs.tooluse.users.LLMUser` over any ``ChatClient``
                       (tau2's guidelines, their tool version where the user has tools, +
                       scenario prompt; every request carries the episode seed, so the LLM
                       layer's cache replays episodes)
Dual control           tau2's user-side tools and state (mock: a notification inbox): the
                       user's turn may be tool calls, run on the user DB and recorded in the
                       episode (``state.calls`` with the requestor, the transcript as tau2
                       records them); the agent sees only the user's text. ``initial_state``
                       data and actions apply to either side. Telecom: the agent has 13
                       tools (customers, lines, plans, bills, data refuel, roaming), the user
                       30 on a simulated phone (status bar, airplane mode, network mode, APN,
                       SIM, data saver, VPN, app permissions, speed test, reboot, payments);
                       after every call the phone syncs with the carrier's records, as in
                       tau2; the policy is tau2's main policy + tech-support manual (option
                       ``policy="workflow"``: the workflow). Option ``solo=True`` is tau2's
                       no-user mode: the agent gets the ticket, the solo policies and both
                       sides' tools plus ``done``; a text message ends the episode at 0
Episode end            ``transfer_to_human_agents``; a user stop token (``###STOP###``,
                       ``###TRANSFER###``, ``###OUT-OF-SCOPE###``); the agent writing
                       ``###STOP###``; truncation after ``config.max_steps`` actions (30 for
                       tau-bench v1 as in its runner, 60 otherwise) with reward 0
Reward                 tau-bench v1: 1 iff DB hash = gold replay's and every ``outputs`` string
                       was said (lower-case, commas removed). tau2: product of the task's
                       ``reward_basis`` (DB incl. the user DB; ENV_ASSERTION on either side;
                       ACTION: 1 iff every gold action is matched by a tool call of either
                       side; COMMUNICATE; NL_ASSERTION needs ``judge=``: without one it is
                       reported in ``reward_info["unscored"]`` and not multiplied in). pass^k: run with
                       ``-k`` samples, ``agentgym report`` prints tau-bench's pass^k
Suites                 ``tooluse/retail-train`` 74, ``tooluse/retail-test`` 40,
                       ``tooluse/airline-train`` 30, ``tooluse/airline-test`` 20, ``tooluse/mock``
                       10, ``tooluse/telecom-train`` 74, ``telecom-test`` 40 (tau2's base
                       split), ``telecom-small`` 20, ``telecom-full`` 2,285 (every task of
                       tau2's ``tasks.json``), ``tooluse/tau-bench-retail-test`` 115, ``tooluse/tau-bench-retail-dev``
                       20; ``bfcl/simple`` 400, ``bfcl/multiple`` 200, ``bfcl/parallel`` 200.
                       Tasks whose correct outcome is the unchanged database (doing nothing
                       succeeds, as the benchmarks grade it) are tagged ``inaction-succeeds``
                       and listed per suite in the manifest; the others ``needs-action``
Expert                 replays the agent's gold actions (plus the write an env assertion names
                       where the gold actions leave it false), asks the user for the user's,
                       says the required outputs, closes: reward 1 on every task except
                       ``tau2-mock-update_task_with_user_tools``, which tau2 grades 0 on every
                       trajectory (its assertion needs the user's dismissal, its DB check the
                       user DB without it); telecom: all 2,285. BFCL: passes all 800
Speed                  reset = fresh copy-on-write view of the shared database; ~190x faster
                       than tau-bench's deep copy per reset; telecom: 240-660 resets/s with
                       both sides' set-up actions (``benchmarks/tooluse.py``)
Data                   tau2-bench (MIT) retail/airline/mock/telecom (telecom's TOML databases
                       converted to JSON), tau-bench (MIT) v1 retail, BFCL v4
                       (Apache-2.0), in ``data/`` with their licences
Regenerate             ``python -m agentgym.envs.tooluse.generate``
=====================  =========================================================================

Databases: pydantic models of each domain (``retail.RetailDB``, ``airline.FlightDB``,
``mock.MockDB``, ``telecom.TelecomDB`` and the phone's ``phone_state.PhoneDB``, whole models in a
``db.ModelDatabase``) hold tau2 data; v1 keeps tau-bench's plain JSON. ``env.export_db()`` returns the
database in the benchmark's JSON schema and ``env.db_hash()`` the hash the benchmark computes
(tau2: sorted JSON dump; tau-bench: ``to_hashable``), so a state can be compared hash for hash.
Oversight and other wrappers can use ``World`` (tool kinds READ/WRITE, ``call``, ``same_state``).

>>> import agentgym
>>> env = agentgym.make("TauBenchRetail-v0")
>>> obs, info = env.reset(seed=0, options={"task": "tau-bench-retail-test-000"})
>>> env.step('{"name": "find_user_id_by_name_zip", "arguments": '
...          '{"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}}')[0]
'yusuf_rossi_9620'
"""

from agentgym.envs.tooluse.bfcl import BFCLEnv
from agentgym.envs.tooluse.env import (
    TauAirlineEnv,
    TauBenchRetailEnv,
    TauEnv,
    TauMockEnv,
    TauRetailEnv,
    TauState,
)
from agentgym.envs.tooluse.tasks import TauConfig, TauGold
from agentgym.envs.tooluse.telecom_env import TauTelecomEnv
from agentgym.envs.tooluse.users import GoldUser, LLMUser, UncooperativeUser
from agentgym.envs.tooluse.world import World

__all__ = [
    "BFCLEnv",
    "GoldUser",
    "LLMUser",
    "TauAirlineEnv",
    "TauBenchRetailEnv",
    "TauConfig",
    "TauEnv",
    "TauGold",
    "TauMockEnv",
    "TauRetailEnv",
    "TauState",
    "TauTelecomEnv",
    "UncooperativeUser",
    "World",
]
