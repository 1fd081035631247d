"""Task config and gold of the tool-use envs, and conversion from tau2-bench / tau-bench files."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentgym.envs.tooluse.opening import first_person, split_instruction
from agentgym.envs.tooluse.world import DOMAINS

RewardType = Literal["DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE"]
DEFAULT_REWARD_BASIS: list[RewardType] = ["DB", "COMMUNICATE"]
"""tau2's default ``reward_basis`` (tau-bench's DB + outputs)."""


class TauConfig(BaseModel):
    """``Task.config`` of the tool-use envs: the domain, the simulated user, the initial state."""

    model_config = ConfigDict(extra="forbid")

    domain: str
    """``retail``, ``airline``, ``mock`` (tau2-bench) or ``tau_bench_retail`` (tau-bench v1)."""
    user_scenario: str
    """The user's instructions, as the LLM user simulator is prompted with them."""
    opening: str
    """What the offline users say first: the request only, in the first person (never the
    scenario's identity details, conditions or what it says to withhold)."""
    known_info: str | None = None
    """What the offline gold-path user tells when asked who it is (first person)."""
    ticket: str | None = None
    """tau2's ticket: the request as a support ticket (what the agent gets in solo mode)."""
    initial_state: dict[str, Any] | None = None
    """tau2 ``initial_state`` (initialisation data and actions, earlier messages), if any."""
    max_steps: int = Field(default=60, ge=1)
    """Agent actions (tool calls and messages) before the episode is truncated."""

    @field_validator("domain")
    @classmethod
    def _known_domain(cls, domain: str) -> str:
        if domain not in DOMAINS:
            raise ValueError(f"unknown domain {domain!r}; known: {', '.join(sorted(DOMAINS))}")
        return domain


class GoldAction(BaseModel):
    """One action of the reference trajectory."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    requestor: Literal["assistant", "user"] = "assistant"
    compare_args: list[str] | None = None
    """Arguments the ACTION check compares (None: all the call's arguments; []: name only)."""

    def matches(self, name: str, arguments: dict[str, Any]) -> bool:
        """tau2's ``Action.compare_with_tool_call``."""
        if name != self.name:
            return False
        keys = set(arguments) if self.compare_args is None else set(self.compare_args)
        if not keys:
            return True
        theirs = {k: v for k, v in arguments.items() if k in keys}
        ours = {k: v for k, v in self.arguments.items() if k in keys}
        return theirs == ours


class TauGold(BaseModel):
    """``Task.gold``: the reference actions and what the grader checks."""

    model_config = ConfigDict(extra="forbid")

    actions: list[GoldAction] | None = None
    outputs: list[str] = Field(default_factory=list)
    """tau-bench v1: strings the agent must tell the user."""
    communicate_info: list[str] = Field(default_factory=list)
    nl_assertions: list[str] = Field(default_factory=list)
    env_assertions: list[dict[str, Any]] = Field(default_factory=list)
    reward_basis: list[RewardType] | None = None
    """tau2 components that gate the reward; None for tau-bench v1 (DB hash and outputs)."""


def render_tau2_scenario(scenario: dict[str, Any]) -> str:
    """tau2's ``UserScenario`` as text: persona, then the (structured) instructions."""
    instructions = scenario.get("instructions")
    if isinstance(instructions, dict):
        parts = [
            ("Domain", instructions.get("domain")),
            ("Reason for call", instructions.get("reason_for_call")),
            ("Known info", instructions.get("known_info")),
            ("Unknown info", instructions.get("unknown_info")),
            ("Task instructions", instructions.get("task_instructions")),
        ]
        text = "\n".join(f"{name}:\n{value}" for name, value in parts if value)
    else:
        text = str(instructions or "")
    persona = scenario.get("persona")
    return f"Persona:\n{persona}\n\nInstructions:\n{text}" if persona else f"Instructions:\n{text}"


def tau2_opening(scenario: dict[str, Any]) -> tuple[str, str | None]:
    """The offline users' (opening, known_info): the reason for the call, and the identity
    details they give when asked, both in the first person."""
    instructions = scenario.get("instructions")
    if isinstance(instructions, dict):
        known = instructions.get("known_info")
        return (
            first_person(str(instructions.get("reason_for_call") or "")),
            first_person(str(known)) if known else None,
        )
    return split_instruction(str(instructions or ""))


def from_tau2(raw: dict[str, Any], domain: str) -> tuple[TauConfig, TauGold]:
    """Config and gold of one tau2-bench task (``tasks.json`` row)."""
    criteria = raw.get("evaluation_criteria") or {}
    actions = criteria.get("actions")
    gold = TauGold(
        actions=None
        if actions is None
        else [
            GoldAction(
                name=a["name"],
                arguments=a.get("arguments") or {},
                requestor=a.get("requestor") or "assistant",
                compare_args=a.get("compare_args"),
            )
            for a in actions
        ],
        communicate_info=criteria.get("communicate_info") or [],
        nl_assertions=criteria.get("nl_assertions") or [],
        env_assertions=criteria.get("env_assertions") or [],
        reward_basis=criteria.get("reward_basis") or DEFAULT_REWARD_BASIS,
    )
    opening, known_info = tau2_opening(raw["user_scenario"])
    config = TauConfig(
        domain=domain,
        user_scenario=render_tau2_scenario(raw["user_scenario"]),
        opening=opening,
        known_info=known_info,
        ticket=raw.get("ticket"),
        initial_state=raw.get("initial_state"),
    )
    return config, gold


def from_tau_bench(raw: dict[str, Any]) -> tuple[TauConfig, TauGold]:
    """Config and gold of one tau-bench v1 retail task."""
    gold = TauGold(
        actions=[GoldAction(name=a["name"], arguments=a["kwargs"]) for a in raw["actions"]],
        outputs=raw.get("outputs") or [],
    )
    opening, known_info = split_instruction(raw["instruction"])
    config = TauConfig(
        domain="tau_bench_retail",
        user_scenario=raw["instruction"],
        opening=opening,
        known_info=known_info,
        max_steps=30,
    )
    return config, gold
