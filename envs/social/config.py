"""Task config of the social envs: a Sotopia scenario, two agent profiles, their goals, a relationship.

Also what each agent may know of the other: Sotopia reveals more of a profile the closer the
relationship (``get_bio`` in sotopia): strangers see nothing of each other, people who know each
other by name see the name, acquaintances also see age, gender, occupation and public info, and
friends, partners and family also see personality and values. Secrets are never shown.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentgym.envs.social.negotiation import ItemDeal, PriceDeal, parse_deal

RELATIONSHIPS = [
    "stranger",
    "know_by_name",
    "acquaintance",
    "friend",
    "romantic_relationship",
    "family_member",
]
"""Sotopia's ``RelationshipType`` values 0..5."""


class AgentProfile(BaseModel):
    """One Sotopia agent profile (the fields its prompts use)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    agent_id: str
    first_name: str
    last_name: str
    age: int
    occupation: str
    gender: str
    gender_pronoun: str
    public_info: str
    personality_and_values: str
    decision_making_style: str = ""
    secret: str = ""

    @property
    def name(self) -> str:
        return f"{self.first_name} {self.last_name}"

    def public(self) -> str:
        """Age, gender, occupation, pronouns and public info: what acquaintances know."""
        return (
            f"{self.name} is a {self.age}-year-old {self.gender.lower()} "
            f"{self.occupation.lower()}. {self.gender_pronoun} pronouns. {self.public_info}"
        )

    def self_description(self) -> str:
        """Everything the agent knows about itself, secret included."""
        return (
            f"{self.public()} Personality and values description: {self.personality_and_values} "
            f"{self.first_name}'s secrets: {self.secret}"
        )

    def seen_by_other(self, relationship: int) -> str:
        """What the other agent knows of this one, given their relationship (Sotopia's get_bio)."""
        if relationship == 0:
            return "Unknown"
        if relationship == 1:
            return self.name
        if relationship == 2:
            return self.public()
        return f"{self.public()} Personality and values description: {self.personality_and_values}"


class SocialConfig(BaseModel):
    """``Task.config`` of the social envs (one Sotopia env x agent combo, one seat)."""

    model_config = ConfigDict(extra="forbid")

    env_id: str
    """Sotopia environment profile id."""
    codename: str
    source: str
    """Where the scenario comes from (``deal-or-no-deal``, ``craigslist_bargains``, ...)."""
    scenario: str
    agents: list[AgentProfile] = Field(min_length=2, max_length=2)
    goals: list[str] = Field(min_length=2, max_length=2)
    """Private social goal of each agent (seat 0, seat 1)."""
    relationship: int = Field(ge=0, le=5)
    """Sotopia relationship type between the two (0 stranger .. 5 family member)."""
    deal: ItemDeal | PriceDeal | None = Field(default=None, discriminator="kind")
    """The verifiable outcome, for deal-or-no-deal and craigslist scenarios (rule-judged)."""
    seat: Literal[0, 1] = 0
    """Which agent the single-agent env's player controls; the partner plays the other seat."""
    partner: str = "scripted:tit-for-tat"
    """Partner spec of the single-agent env: ``scripted:<strategy>`` or ``llm``."""
    max_turns: int = Field(default=20, ge=1, le=200)
    """Sotopia ends an episode after 20 turns (one agent acts per turn)."""
    max_stale_turns: int = Field(default=2, ge=0)
    """The episode ends after more than this many consecutive ``none`` turns."""

    @model_validator(mode="after")
    def _deal_matches_goals(self) -> SocialConfig:
        parsed = parse_deal(self.source, self.scenario, self.goals)
        if self.deal is not None and parsed != self.deal:
            raise ValueError(
                f"deal {self.deal.model_dump()} does not match the one parsed from the goals "
                f"({parsed.model_dump() if parsed else None})"
            )
        if self.deal is None and parsed is not None:
            raise ValueError(f"source {self.source!r} has a verifiable deal: set config.deal")
        return self

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.agents]
