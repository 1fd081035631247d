"""Built-in agentgym environments, registered through the ``agentgym.envs`` entry point.

Registration is by ``module:Class`` string, so importing this package imports no env module. A new
env is its folder here plus one line in ``BUILTIN_ENVS``: setup.py finds the folder's packages and
pyproject's package data takes its ``data/`` (docs/envs.md, "Adding an environment").
"""

from agentgym.agent import register_agent
from agentgym.bounded_context import NOTES
from agentgym.registry import register
from agentgym.task_formats import TASK_FORMATS

# fmt: off
BUILTIN_ENVS: dict[str, tuple[str, str]] = {
    # id: (module:Class below agentgym.envs, one line for `agentgym envs`)
    "Clarify-v0": ("clarify.env:ClarifyEnv", "Intent clarification (20 questions) over real products and movies"),
    "Household-v0": ("household.env:HouseholdEnv", "ALFWorld-compatible household text game (6 task types, 120 ALFRED floor plans)"),
    "KBQA-v0": ("kbqa.env:KBQAEnv", "Knowledge-base QA over MetaQA with KBQA-R1's actions (joins, merge, order, compare, count)"),
    "OversightAgent-v0": ("oversight.seats:OversightAgentEnv", "Oversight game (gridworld), agent seat: play or ask; the human is an embedded partner"),
    "OversightHuman-v0": ("oversight.seats:OversightHumanEnv", "Oversight game (gridworld), human seat: trust or oversee; the agent is an embedded partner"),
    "TauRetail-v0": ("tooluse.env:TauRetailEnv", "Customer service with a simulated user: tau2-bench retail tools, policy and tasks"),
    "TauAirline-v0": ("tooluse.env:TauAirlineEnv", "Customer service with a simulated user: tau2-bench airline tools, policy and tasks"),
    "TauMock-v0": ("tooluse.env:TauMockEnv", "tau2-bench's mock domain (every tau2 evaluation feature, 10 tasks)"),
    "TauTelecom-v0": ("tooluse.telecom_env:TauTelecomEnv", "tau2-bench telecom: dual control, the user fixes their own phone with its tools"),
    "TauBenchRetail-v0": ("tooluse.env:TauBenchRetailEnv", "tau-bench v1 retail: its tools, data and tasks, graded by database hash and outputs"),
    "BFCL-v0": ("tooluse.bfcl:BFCLEnv", "Single-turn function calling (BFCL v4 simple, multiple, parallel), AST-graded"),
    "Swe-v0": ("swe.env:SweEnv", "Fix bugs in sandboxed repositories (HumanEvalFix, toolz mutations); hidden tests grade"),
    "WebShop-v0": ("webshop.env:WebShopEnv", "WebShop-compatible web shopping (search, results, options, buy) with WebShop's reward"),
    "Social-v0": ("social.env:SocialEnv", "Sotopia social interaction (one seat, partner embedded); rule or LLM judge on 7 dimensions"),
}
# fmt: on

ENV_AGENTS: dict[str, str] = {
    # --agent PREFIX:ARG specs that ship with an env (module:function below agentgym.envs)
    "scripted": "social.scripted:scripted_agent",
    "search": "household.searcher:search_agent",
}

ENV_NOTES: dict[str, str] = {
    # ?notes=NAME / rollout.notes of a bounded context that ship with an env (module:function)
    "household": "household.notes:room_notes",
}

ENV_TASK_FORMATS: dict[str, str] = {
    # `agentgym tasks import-NAME` / `export-NAME` formats an env's tasks come in (module:attr)
    "harbor": "swe.harbor:HARBOR",
}


def register_envs() -> None:
    """Register every built-in env with agentgym and Gymnasium, and the agents, bounded-context
    notes and task formats envs ship."""
    for env_id, (entry_point, description) in BUILTIN_ENVS.items():
        register(env_id, f"{__name__}.{entry_point}", description=description)
    for prefix, ref in ENV_AGENTS.items():
        register_agent(prefix, f"{__name__}.{ref}")
    for name, ref in ENV_NOTES.items():
        NOTES.register(name, f"{__name__}.{ref}")
    for name, ref in ENV_TASK_FORMATS.items():
        TASK_FORMATS.register(name, f"{__name__}.{ref}")
