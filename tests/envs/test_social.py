"""agentgym/Social-v0 and the parallel env on the real Sotopia suites: data, rules, turns, partners."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from support import shared_data

import agentgym
from agentgym.envs.social import SocialConfig, parallel_env
from agentgym.envs.social.actions import ActionError, AgentAction, parse_agent_action
from agentgym.envs.social.game import GameState, play_turn
from agentgym.envs.social.negotiation import ItemDeal, PriceDeal, parse_deal
from agentgym.envs.social.partners import make_negotiator
from agentgym.envs.social.scripted import scripted_agent, stance_for
from agentgym.task import TaskSuite, check_suite
from agentgym.testing import check_env, check_parallel_env

DATA = shared_data() / "sotopia"
TASKS = Path(__file__).resolve().parents[2] / "tasks" / "social"


@pytest.fixture(scope="module")
def negotiation() -> TaskSuite:
    return TaskSuite.load("social/negotiation")


def _task(suite: TaskSuite, source: str, seat: int = 0):
    return next(t for t in suite if t.config["source"] == source and t.config["seat"] == seat)


# ---------------------------------------------------------------------------- data and suites
def test_suites_hold_the_sotopia_counts():
    all_, hard = TaskSuite.load("social/all"), TaskSuite.load("social/hard")
    assert len(all_) == 450 and len({t.config["env_id"] for t in all_}) == 90
    assert len({a["agent_id"] for t in all_ for a in t.config["agents"]}) == 40
    assert json.loads((TASKS / "manifest.json").read_text())["suites"]["all"]["tasks"] == 450
    assert len(hard) == 70 and len({t.config["env_id"] for t in hard}) == 14
    assert all("hard" in t.tags for t in hard)
    for name in ("all", "hard", "negotiation"):
        assert check_suite(f"social/{name}") == []


def test_hard_suite_is_sotopia_hard():
    if not DATA.is_dir():
        pytest.skip("shared Sotopia data not present")
    hard = set(json.loads((DATA / "hard_env_ids.json").read_text())["sotopia_hard_env_id"])
    assert {t.config["env_id"] for t in TaskSuite.load("social/hard")} == hard


def test_every_verifiable_scenario_parses(negotiation):
    deals = {t.config["env_id"]: SocialConfig.model_validate(t.config).deal for t in negotiation}
    assert len(deals) == 20
    kinds = [d.kind for d in deals.values() if d is not None]
    assert kinds.count("items") == 10 and kinds.count("price") == 10


def test_deal_parsing_reads_the_goals():
    scenario = "Two friends divide 3 books, 2 hats, and 1 ball."
    goals = [
        "Maximize points (<extra_info>Extra information: Books give you 5 points each, hats give you 3 points each, and the ball gives you 2 points.</extra_info>)",
        "Maximize points (<extra_info>Extra information: For you, 1 book = 2 points, 1 hat = 5 points, 1 ball = 3 points</extra_info>)",
    ]
    deal = parse_deal("deal-or-no-deal", scenario, goals)
    assert deal == ItemDeal(
        counts={"book": 3, "hat": 2, "ball": 1},
        values=[{"book": 5, "hat": 3, "ball": 2}, {"book": 2, "hat": 5, "ball": 3}],
    )
    assert deal.max_points(0) == 23 and deal.points(1, {"hat": 2}) == 10
    price = parse_deal(
        "craigslist_bargains",
        "One person is selling a TV for $349.0.",
        [
            "You are the buyer for this item and your target price is $174.00.",
            "You are the seller, with a target price set at $263.0.",
        ],
    )
    assert price == PriceDeal(listing=349.0, roles=["buyer", "seller"], targets=[174.0, 263.0])
    assert price.utility(0, 174.0) == 1.0 and price.utility(0, 349.0) == 0.0
    assert price.utility(1, 263.0) == 1.0 and price.utility(1, 263.0 - 175.0) == 0.0
    with pytest.raises(ValueError, match="no points for"):
        parse_deal("deal-or-no-deal", scenario, [goals[0], "Maximize points, nothing else"])


def test_relationship_decides_what_the_other_knows(negotiation):
    config = SocialConfig.model_validate(negotiation.tasks[0].config)
    other = config.agents[1]
    views = [other.seen_by_other(r) for r in range(6)]
    assert views[0] == "Unknown" and views[1] == other.name
    assert other.public_info in views[2] and other.personality_and_values not in views[2]
    assert all(other.personality_and_values in v for v in views[3:])
    assert not any(other.secret in v for v in views)


# ---------------------------------------------------------------------------- actions and turns
@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"action_type": "speak", "argument": "Hi!"}', AgentAction("speak", "Hi!")),
        ("action: propose book=1", AgentAction("action", "propose book=1")),
        ("non-verbal: smiles", AgentAction("non-verbal communication", "smiles")),
        ("leave", AgentAction("leave")),
        ("Hello, how are you?", AgentAction("speak", "Hello, how are you?")),
    ],
)
def test_actions_parse(text, expected):
    assert parse_agent_action(text) == expected


@pytest.mark.parametrize(
    "text", ["", "  ", "[[[[", "\x00\x01", '{"action_type": "dance"}', "{not json", "speak"]
)
def test_malformed_actions_are_errors(text):
    with pytest.raises(ActionError, match="action|JSON|words|argument"):
        parse_agent_action(text)


def _config(negotiation, source="deal-or-no-deal", **changes) -> SocialConfig:
    return SocialConfig.model_validate({**_task(negotiation, source).config, **changes})


def test_round_robin_and_the_turn_limit(negotiation):
    config, state = _config(negotiation), GameState()
    for t in range(20):
        assert state.acting == t % 2 and not state.done
        play_turn(state, config, f"speak: line {t}")
    assert state.done and "turn limit" in state.end_reason
    assert [e.seat for e in state.events] == [t % 2 for t in range(20)]


def test_leaving_and_staleness_end_the_episode(negotiation):
    config, state = _config(negotiation), GameState()
    play_turn(state, config, "speak: hi")
    play_turn(state, config, "leave")
    assert state.done and state.left == 1
    state = GameState()
    for text in ("none", "", "none"):  # a malformed action counts as none
        assert not state.done
        play_turn(state, config, text)
    assert state.done and "none" in state.end_reason
    assert [e.valid for e in state.events] == [True, False, True]


def test_moves_make_and_guard_agreements(negotiation):
    task = next(
        t
        for t in negotiation
        if t.config["deal"] and t.config["deal"].get("counts", {}).get("book") == 3
    )
    config, state = SocialConfig.model_validate(task.config), GameState()
    assert not play_turn(state, config, "action: accept").valid  # nothing to accept yet
    event = play_turn(state, config, "action: propose book=3, hat=0, ball=1")
    assert event.valid and event.move is not None
    assert not play_turn(state, config, "action: propose book=9").valid  # only 3 books
    assert not play_turn(state, config, "action: accept").valid  # its own proposal
    play_turn(state, config, "action: accept")
    assert state.agreement is not None and state.proposer == 1
    assert not play_turn(state, config, "action: propose book=1").valid  # already agreed


# ---------------------------------------------------------------------------- single-agent env
@pytest.mark.parametrize(
    "source, seat", [("deal-or-no-deal", 1), ("craigslist_bargains", 0), ("craigslist_bargains", 1)]
)
def test_conformance_on_other_seats_and_kinds(negotiation, source, seat):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(agentgym.make("Social-v0"), tasks=[_task(negotiation, source, seat)])


def test_the_player_sees_its_goal_not_the_others(negotiation):
    task = _task(negotiation, "deal-or-no-deal", 1)
    config = SocialConfig.model_validate(task.config)
    obs, info = agentgym.make("Social-v0").reset(seed=0, options={"task": task})
    assert config.goals[1] in obs and config.goals[0] not in obs
    assert config.agents[1].secret in obs and config.agents[0].secret not in obs
    assert "Turn #0:" in obs and "it is your turn" in obs  # the partner moved first


def _play(task, player: str, partner: str, seed: int = 0):
    env = agentgym.make("Social-v0", partner=partner)
    agent = scripted_agent(player, env)
    obs, info = env.reset(seed=seed, options={"task": task})
    agent.reset(info)
    while True:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        if terminated or truncated:
            return env, reward, info


def test_conceding_partners_make_deals_and_hardliners_do_not(negotiation):
    task = _task(negotiation, "craigslist_bargains")
    env, reward, info = _play(task, "follower", "scripted:conceder")
    assert info["agreement"] and info["success"] and env.state.game.left is not None
    assert 0 < reward == info["score"] <= 1
    env, reward, info = _play(task, "hardliner", "scripted:hardliner")
    assert "agreement" not in info and not info["success"]
    assert info["evaluation"]["scores"]["goal"] == 0.0


def test_scripted_partners_follow_their_strategies(negotiation):
    task = _task(negotiation, "craigslist_bargains")
    config = SocialConfig.model_validate(task.config)
    prices = {}
    for name in ("hardliner", "conceder", "tit-for-tat"):
        env, _, _ = _play(task, "hardliner", f"scripted:{name}")
        prices[name] = [
            e.move.price for e in env.state.game.events if e.seat == 1 and e.move and e.move.price
        ]
    seller_drop = {n: p[0] - p[-1] for n, p in prices.items()}
    assert seller_drop["conceder"] > seller_drop["hardliner"] > 0
    assert seller_drop["tit-for-tat"] < seller_drop["conceder"]
    assert config.deal is not None


def test_switcher_cooperates_then_exploits(negotiation):
    task = _task(negotiation, "craigslist_bargains")
    prices = {}
    for strategy in ("Acknowledge and validate their feelings.", "Hold firm; you can walk away."):
        env = agentgym.make("Social-v0", partner="scripted:switcher?switch=10")
        agent = scripted_agent("follower", env)
        obs, info = env.reset(seed=0, options={"task": task})
        agent.reset(info)
        while True:
            obs, _, term, trunc, info = env.step(agent.act(f"Strategy: {strategy}\n{obs}", info))
            if term or trunc:
                break
        prices[strategy[:4]] = [
            (e.turn, e.move.price)
            for e in env.state.game.events
            if e.seat == 1 and e.move and e.move.price
        ]
    soft, firm = prices["Ackn"], prices["Hold"]
    assert [p for t, p in soft if t < 10][-1] < soft[0][1]  # phase A: cooperation paid
    assert max(p for t, p in firm if t < 10) == firm[0][1]  # firmness did not
    assert [p for t, p in firm if t >= 10][-1] < [p for t, p in firm if t < 10][
        -1
    ]  # phase B: it did
    with pytest.raises(ValueError, match="switch=N"):
        make_negotiator("hardliner?switch=3")
    with pytest.raises(ValueError, match="allowed"):
        make_negotiator("softie")


def test_follower_behaviour_depends_on_the_strategy_words(negotiation):
    assert stance_for("Hold firm; you have a strong BATNA.").step < stance_for("").step
    assert stance_for("Mirror them: match their last move.").reactions.reciprocity == 1.0
    assert stance_for("Announce unilateral goodwill concessions (GRIT).").step > stance_for("").step
    task = _task(negotiation, "craigslist_bargains")
    env = agentgym.make("Social-v0", partner="scripted:conceder")
    offers = {}
    for strategy in (
        "",
        "Strategy: hold firm and make clear you can walk away",
        "Strategy: make unilateral goodwill concessions",
    ):
        agent = scripted_agent("follower", env)
        obs, info = env.reset(seed=0, options={"task": task})
        agent.reset(info)
        moves = []
        for _ in range(3):
            action = agent.act(f"{strategy}\n{obs}", info)
            moves.append(action)
            obs, _, term, trunc, info = env.step(action)
            if term or trunc:
                break
        offers[strategy] = moves
    assert len({tuple(m) for m in offers.values()}) == 3


def test_unverifiable_scenarios_need_an_llm_judge(monkeypatch):
    from agentgym.envs.social.factory import model_spec

    monkeypatch.delenv("AGENTGYM_SOCIAL_MODEL", raising=False)
    task = next(t for t in TaskSuite.load("social/hard") if t.config["deal"] is None)
    assert model_spec("llm", None) == "hf:smollm2"  # no model given: the embedded default
    assert model_spec("llm", "openai:x") == "openai:x"
    monkeypatch.setenv("AGENTGYM_SOCIAL_MODEL", "openai:y")
    assert model_spec("llm", None) == "openai:y"
    with pytest.raises(ValueError, match="rule-based judge scores only"):
        agentgym.make("Social-v0", judge="rule").reset(seed=0, options={"task": task})


# ---------------------------------------------------------------------------- parallel env
def test_parallel_api():
    check_parallel_env(parallel_env(suite="social/negotiation"), num_cycles=100)


def test_parallel_env_episode(negotiation):
    env = parallel_env(suite="social/negotiation", evaluate_every_turn=True)
    task = _task(negotiation, "deal-or-no-deal")
    obs, infos = env.reset(seed=1, options={"task": task})
    config = SocialConfig.model_validate(task.config)
    for seat, agent in enumerate(env.possible_agents):
        assert config.goals[seat] in obs[agent] and config.goals[1 - seat] not in obs[agent]
    assert infos["agent_0"]["acting"] and not infos["agent_1"]["acting"]
    obs, rewards, term, trunc, infos = env.step(
        {"agent_0": "speak: Shall we split fairly?", "agent_1": "speak: out of turn"}
    )
    assert (
        'said: "Shall we split fairly?"' in obs["agent_1"] and "out of turn" not in obs["agent_0"]
    )
    assert set(infos["agent_0"]["evaluation"]["scores"]) == set(
        infos["agent_1"]["evaluation"]["scores"]
    )
    obs, rewards, term, trunc, infos = env.step({"agent_1": "leave"})
    assert all(term.values()) and env.agents == []
    assert all(0 <= r <= 1 for r in rewards.values())


def test_doc_page_example_runs():
    import doctest

    import agentgym.envs.social

    assert doctest.testmod(agentgym.envs.social).failed == 0


def test_an_empty_deal_scores_zero(negotiation):
    """Sotopia's headline score is goal completion: a deal that gives the player nothing scores 0
    (the mean over all seven dimensions gave it about 0.5 for being harmless)."""
    env = parallel_env(suite="social/negotiation")
    task = _task(negotiation, "deal-or-no-deal")
    env.reset(seed=0, options={"task": task})
    deal = SocialConfig.model_validate(task.config).deal
    nothing = ", ".join(f"{item}=0" for item in deal.counts)
    env.step({"agent_0": f"action: propose {nothing}"})
    env.step({"agent_1": "action: accept"})
    _, rewards, term, _, infos = env.step({"agent_0": "leave"})
    assert all(term.values())
    assert rewards["agent_0"] == 0.0 and rewards["agent_1"] == 1.0
    assert infos["agent_0"]["evaluation"]["normalized"] > 0.4  # what the old score was
