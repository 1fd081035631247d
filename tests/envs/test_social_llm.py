"""The LLM judge and LLM partner: prompts, strict parsing, retries, and a real client end to end."""

from __future__ import annotations

import json

import pytest

import agentgym
from agentgym.envs.social import DIMENSIONS, JudgeError, LLMJudge, LLMPartner, SocialConfig
from agentgym.envs.social.game import GameState, play_turn
from agentgym.envs.social.llm_judge import judge_prompt, parse_judgement
from agentgym.envs.social.llm_partner import extract_action
from agentgym.task import TaskSuite
from agentgym.testing import ScriptedClient


@pytest.fixture(scope="module")
def hard_config() -> SocialConfig:
    task = next(t for t in TaskSuite.load("social/hard") if t.config["deal"] is None)
    return SocialConfig.model_validate(task.config)


def _verdict(scale: float = 1.0, **override) -> str:
    one = {
        d: [f"why {d}", hi * scale if hi > 0 else lo * scale] for d, (lo, hi) in DIMENSIONS.items()
    }
    one.update(override)
    return json.dumps({"agent_1_evaluation": one, "agent_2_evaluation": one})


def _state(config: SocialConfig) -> GameState:
    state = GameState()
    play_turn(state, config, "speak: Hello there, can we talk?")
    play_turn(state, config, "non-verbal: nods")
    return state


def test_prompt_holds_rubric_backgrounds_and_conversation(hard_config):
    prompt = judge_prompt(hard_config, _state(hard_config))
    for dim in DIMENSIONS:
        assert dim in prompt
    assert hard_config.goals[0] in prompt and hard_config.goals[1] in prompt
    assert hard_config.agents[0].secret in prompt  # the judge must know what to keep secret
    assert (
        'said: "Hello there, can we talk?"' in prompt
        and "[non-verbal communication] nods" in prompt
    )


def test_parse_judgement_formats():
    evaluations = parse_judgement("Sure:\n```json\n" + _verdict(0.5) + "\n```")
    assert evaluations[0].scores["goal"] == 5.0 and evaluations[0].scores["secret"] == -5.0
    assert evaluations[0].reasoning["goal"] == "why goal"
    dicts = json.loads(_verdict())
    dicts["agent_2_evaluation"] = {d: {"reasoning": "r", "score": 0} for d in DIMENSIONS}
    assert parse_judgement(json.dumps(dicts))[1].overall == 0.0
    for bad, message in [
        ("no json here", "not a JSON object"),
        (_verdict(goal=["x", 11]), "outside its range"),
        (_verdict(goal=["x", "high"]), "not a number"),
        (json.dumps({"agent_1_evaluation": {}}), "lacks the dimension"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_judgement(bad)


def test_judge_retries_then_raises(hard_config):
    client = ScriptedClient(["garbage", _verdict(goal=["x", 42]), _verdict(0.5)])
    evaluations = LLMJudge(client).evaluate(hard_config, _state(hard_config))
    assert len(client.requests) == 3 and evaluations[1].scores["goal"] == 5.0
    assert "outside its range" in client.requests[2].messages[-1]["content"]
    with pytest.raises(JudgeError, match="no valid evaluation in 2 tries"):
        LLMJudge(ScriptedClient(["x", "y"]), max_tries=2).evaluate(hard_config, _state(hard_config))


def test_partner_sees_its_own_seat_and_its_reply_is_an_action(hard_config):
    client = ScriptedClient(['I think: {"action_type": "speak", "argument": "Hi, I am here."}'])
    partner = LLMPartner(client)
    partner.reset(seed=7)
    state = GameState()
    play_turn(state, hard_config, "speak: Good morning!")
    action = partner.act(hard_config, state, 1)
    assert json.loads(action) == {"action_type": "speak", "argument": "Hi, I am here."}
    request = client.requests[0]
    assert request.seed == 7 and hard_config.goals[1] in request.messages[1]["content"]
    assert hard_config.goals[0] not in request.messages[1]["content"]
    assert extract_action("just words") == "just words"


def test_env_with_llm_partner_and_judge_through_scripted_client(hard_config, monkeypatch):
    task = next(t for t in TaskSuite.load("social/hard") if t.config["deal"] is None)
    replies = {"judge": _verdict(0.5), "partner": '{"action_type": "leave", "argument": ""}'}
    client = ScriptedClient(
        lambda req: replies[
            "judge" if "Conversation:" in req.messages[-1]["content"] else "partner"
        ]
    )
    monkeypatch.setattr("agentgym.llm.factory.make_client", lambda spec, **kw: client)
    env = agentgym.make("Social-v0", model="openai:judge-model")
    obs, info = env.reset(seed=0, options={"task": task})
    obs, reward, terminated, truncated, info = env.step("speak: I need to tell you something.")
    assert terminated and info["evaluation"]["scores"]["goal"] == 5.0
    assert reward == info["score"] == 0.5  # the goal score on 0..1
    assert info["evaluation"]["normalized"] == pytest.approx(4 / 7)  # (.5 x5 + .75 x2) / 7
    assert info["success"]


def test_llm_partner_and_judge_against_a_served_model(served, hard_config):
    """A real OpenAI client against `agentgym serve`: the tiny model's replies are not valid
    judgements, so the judge raises (never a silent 0), and its partner turns are turns."""
    from agentgym.llm.factory import make_client

    client = make_client(f"openai:tiny?base_url={served}&api_key=x")
    partner = LLMPartner(client, max_tokens=16)
    partner.reset(seed=0)
    state = GameState()
    play_turn(state, hard_config, "speak: Hello!")
    play_turn(state, hard_config, partner.act(hard_config, state, 1))
    assert state.turn == 2 and state.events[1].seat == 1
    with pytest.raises(JudgeError):
        LLMJudge(client, max_tries=1, max_tokens=16).evaluate(hard_config, state)


def test_dims_protocol_asks_one_integer_per_agent_and_dimension(hard_config):
    """The small-model protocol: 14 short prompts, each one dimension's question on one 0..10
    scale, mapped back to Sotopia's ranges; a reply out of range is asked again with the problem
    named."""
    from agentgym.envs.social.llm_judge import parse_dimension

    def reply(request):
        prompt = request.messages[0]["content"]
        dim = next(d for d in DIMENSIONS if f"on {d.replace('_', ' ')}." in prompt)
        if len(request.messages) == 1 and dim == "goal":
            return "42"  # out of 0..10: asked again
        return "3 because"

    client = ScriptedClient(reply)
    first, second = LLMJudge(client, protocol="dims").evaluate(hard_config, _state(hard_config))
    assert (
        first.scores
        == second.scores
        == {
            "believability": 3,
            "relationship": -2,  # 5 is "unchanged"
            "knowledge": 3,
            "secret": -3,  # asked as how much was revealed
            "social_rules": -3,  # asked as how seriously rules were broken
            "financial_and_material_benefits": -2,
            "goal": 3,
        }
    )
    assert len(client.requests) == 14 + 2  # the two goal prompts were asked twice
    retried = [r for r in client.requests if len(r.messages) == 3]
    assert "goal: 42 is outside 0..10" in retried[0].messages[-1]["content"]
    assert all(r.max_tokens == 8 for r in client.requests)
    assert all("one integer from 0 to 10" in r.messages[0]["content"] for r in client.requests)
    assert hard_config.agents[0].secret in client.requests[0].messages[0]["content"]
    with pytest.raises(ValueError, match="has no integer"):
        parse_dimension("high", "goal")
    with pytest.raises(ValueError, match="allowed: json, dims"):
        LLMJudge(client, protocol="xml")
