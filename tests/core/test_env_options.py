"""Env options: one check for --env-option, evaluate(env_options=) and a train config's env.kwargs."""

import pytest
from pydantic import ValidationError

import agentgym
from agentgym.env_options import check_env_options, list_options, parse_env_options
from agentgym.task import TaskSuite
from agentgym.train.config import TrainConfig


def test_options_come_from_the_constructor_with_types_and_defaults():
    options = {o.name: o for o in list_options("Social-v0")}
    assert options["judge"].type == "str" and options["judge"].default == "auto"
    assert options["judge_every_turn"].type == "bool" and not options["judge"].required
    assert {o.name for o in list_options("TauRetail-v0")} >= {"user", "judge"}


def test_text_values_are_coerced_to_the_option_type():
    assert check_env_options("KBQA-v0", {"handles": "true"}) == {"handles": True}
    assert check_env_options("Social-v0", {"partner": "llm", "judge_every_turn": "0"}) == {
        "partner": "llm",
        "judge_every_turn": False,
    }
    assert parse_env_options(["user=llm:openai:gpt-4o", "a=b=c"]) == {
        "user": "llm:openai:gpt-4o",
        "a": "b=c",
    }


@pytest.mark.parametrize(
    "env_id, options, message",
    [
        (
            "KBQA-v0",
            {"handle": True},
            "KBQA-v0 has no option 'handle'; options: suite, render_mode",
        ),
        (
            "KBQA-v0",
            {"handles": "maybe"},
            "option handles='maybe': Input should be a valid boolean",
        ),
        ("Nope-v0", {"x": 1}, "no environment 'Nope-v0'"),
    ],
)
def test_bad_options_name_what_is_allowed(env_id, options, message):
    with pytest.raises((ValueError, KeyError), match=message):
        check_env_options(env_id, options)


def test_evaluate_passes_checked_options_to_every_env_and_into_the_run_id(tmp_path):
    tasks = TaskSuite.load("kbqa/metaqa-test").filter((), 2)
    plain = agentgym.evaluate(tasks, "expert", db=tmp_path / "r.db")
    handles = agentgym.evaluate(tasks, "expert", db=tmp_path / "r.db", env_options={"handles": "1"})
    assert plain.run_id != handles.run_id
    assert all("@1 = " in e.first_observation for e in handles.new_episodes)
    assert not any("@1" in e.first_observation for e in plain.new_episodes)
    again = agentgym.evaluate(tasks, "expert", db=tmp_path / "r.db", env_options={"handles": True})
    assert again.run_id == handles.run_id and not again.new_episodes  # same checked value: a resume
    with pytest.raises(ValueError, match="has no option 'handle'"):
        agentgym.evaluate(tasks, "expert", db=tmp_path / "r.db", env_options={"handle": True})


def test_train_config_checks_env_kwargs():
    with pytest.raises(ValidationError, match="has no option 'handle'"):
        TrainConfig.model_validate(
            {"model": {"path": "x"}, "env": {"id": "KBQA-v0", "kwargs": {"handle": 1}}}
        )
    ok = TrainConfig.model_validate(
        {"model": {"path": "x"}, "env": {"id": "KBQA-v0", "kwargs": {"handles": "true"}}}
    )
    assert ok.env.kwargs == {"handles": True}
