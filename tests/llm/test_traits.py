"""Env traits as one typed record: read the same off an env class, an env and a wrapped env,
defaults written once (what an env that declares nothing gets), and the sampling spec built
from them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

import agentgym
from agentgym.env import TextEnv
from agentgym.llm.sampling import SamplingSpec
from agentgym.traits import DEFAULT_MAX_TOKENS, EnvTraits, demonstration, traits


def test_an_env_class_an_env_and_a_wrapped_env_have_the_same_traits():
    env = agentgym.make("Clarify-v0")  # wrapped (a TimeLimit / order enforcer)
    cls = type(env.unwrapped)
    assert traits(env) == traits(env.unwrapped) == traits(cls)
    got = traits(cls)
    assert (got.one_line_actions, got.action_max_tokens, got.default_suite, got.demo_suite) == (
        True,
        48,
        "clarify/test",
        "clarify/train",
    )
    assert got.system_prompt == cls.system_prompt and got.stop == ("\n",)


def test_an_env_that_declares_nothing_gets_the_defaults_of_the_record():
    class Bare:  # not a TextEnv: a third-party gymnasium env
        pass

    assert traits(Bare) == traits(Bare()) == traits(None) == EnvTraits()
    assert traits(TextEnv) == EnvTraits()  # the base class declares the same defaults
    assert EnvTraits().action_max_tokens == DEFAULT_MAX_TOKENS and EnvTraits().stop == ()
    assert demonstration(Bare()) == [] and demonstration(None) == []


def test_a_bad_trait_is_refused_with_its_name():
    class Bad:
        action_max_tokens = 0

    with pytest.raises(ValidationError, match="action_max_tokens"):
        traits(Bad)


def test_the_sampling_spec_of_an_env_is_built_from_its_traits():
    env = agentgym.make("Clarify-v0")
    spec = SamplingSpec().for_env(env)
    assert (spec.max_tokens, spec.stop) == (48, ("\n",))
    assert SamplingSpec().for_env(None).max_tokens == DEFAULT_MAX_TOKENS
    assert demonstration(env) == env.unwrapped.demonstration() != []
