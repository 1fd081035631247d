"""Household: ALFWorld-compatible text game (placeholder docstring, replaced below)."""

from agentgym.envs.household.env import HouseholdEnv

__all__ = ["HouseholdEnv"]
