"""Content-reactive negotiation: tactic reading, partner reactions, the strategy follower, and
that the best strategy depends on the partner and changes at the switcher's switch."""

from __future__ import annotations

import numpy as np
import pytest

import agentgym
from agentgym.agents.also import STRATEGY_SETS
from agentgym.envs.social import SocialConfig
from agentgym.envs.social.game import GameState, play_turn
from agentgym.envs.social.partners import make_negotiator
from agentgym.envs.social.scripted import scripted_agent, stance_for
from agentgym.envs.social.tactics import TALK, read_talk, turn_tags
from agentgym.task import TaskSuite


@pytest.fixture(scope="module")
def negotiation() -> TaskSuite:
    return TaskSuite.load("social/negotiation")


def _price_config(negotiation) -> SocialConfig:
    task = next(
        t
        for t in negotiation
        if t.config["source"] == "craigslist_bargains" and t.config["seat"] == 0
    )
    return SocialConfig.model_validate(task.config)


# ---------------------------------------------------------------------------- reading turns
def test_every_talk_phrasing_carries_its_tactic_and_no_opposite_family():
    firm, coop = (
        {"pressure", "credibility"},
        {"empathy", "question", "reciprocity", "goodwill", "joint"},
    )
    for tactic, lines in TALK.items():
        assert len(set(lines)) == len(lines) >= 5
        for line in lines:
            tags = read_talk(line)
            assert tactic in tags, (tactic, line)
            assert not tags & (coop if tactic in firm else firm), (tactic, line)
    assert read_talk("Let us split it.") == frozenset()


def test_moves_are_read_as_concessions_or_stands(negotiation):
    config, state = _price_config(negotiation), GameState()
    buyer = config.deal.targets[0]
    for text in (f"action: offer ${buyer:g}", "speak: hi", f"action: offer ${buyer:g}",
                 "speak: hi", f"action: offer ${buyer + 60:g}", "speak: hi",
                 "speak: I understand and appreciate your position."):  # fmt: skip
        play_turn(state, config, text)
    turns = turn_tags(config, state, reader=1)  # the seller reads the buyer's turns
    assert "stand" in turns[0].tags  # a first offer worth little to the seller
    assert "stand" in turns[1].tags and turns[1].concession == 0  # the same offer again
    assert "concession" in turns[2].tags and turns[2].concession > 0.1
    assert turns[3].cooperative and not turns[3].firm


# ---------------------------------------------------------------------------- partner reactions
def _demand_after(negotiation, spec: str, lines: list[str], preset: float | None = None) -> float:
    """The partner's demand after answering the player's ``lines`` (one per player turn)."""
    config, state = _price_config(negotiation), GameState()
    partner = make_negotiator(spec)
    for i, line in enumerate(lines):
        play_turn(state, config, line)
        if i == len(lines) - 1 and preset is not None:
            partner.demand = preset
        play_turn(state, config, partner.act(config, state, 1))
    return partner.demand


COOP = "speak: I understand where you are coming from, and I appreciate your position."
FIRM = "speak: I have other offers on the table, and I am ready to walk away."
ARGUE = "speak: Look at the evidence: comparable deals settle near my number."
OPEN = "action: offer $1"


def test_switcher_rewards_cooperation_before_the_switch_and_firmness_after(negotiation):
    before = "switcher?switch=20"
    assert _demand_after(negotiation, before, [OPEN, COOP], 0.8) < 0.8 - 0.03
    assert _demand_after(negotiation, before, [OPEN, FIRM], 0.8) > 0.8 + 0.05
    after = "switcher?switch=2"
    assert _demand_after(negotiation, after, [OPEN, COOP], 0.8) > 0.8 + 0.05
    assert _demand_after(negotiation, after, [OPEN, FIRM], 0.8) < 0.8 - 0.03
    assert _demand_after(negotiation, after, [OPEN, ARGUE], 0.8) < 0.8


def test_switcher_reacts_to_the_history(negotiation):
    after = "switcher?switch=2"
    credible = _demand_after(negotiation, after, [OPEN, FIRM, FIRM, FIRM], 0.8)
    after_soft = _demand_after(negotiation, after, [OPEN, COOP, COOP, FIRM], 0.8)
    assert credible < after_soft < 0.8  # a threat after a run of soft turns moves it less
    trusting = _demand_after(negotiation, "switcher?switch=20", [OPEN, COOP, COOP, COOP], 0.8)
    once = _demand_after(negotiation, "switcher?switch=20", [OPEN, FIRM, FIRM, COOP], 0.8)
    assert trusting < once < 0.8


def test_tit_for_tat_mirrors_words_and_concessions(negotiation):
    hi = "speak: Hello."  # its one opening concession comes on its second turn
    assert _demand_after(negotiation, "tit-for-tat", [OPEN, hi, FIRM], 0.8) > 0.8
    assert _demand_after(negotiation, "tit-for-tat", [OPEN, hi, COOP], 0.8) < 0.8
    config = _price_config(negotiation)
    buyer = config.deal.targets[0]
    conceding = [f"action: offer ${buyer:g}", hi, f"action: offer ${buyer + 50:g}"]
    assert _demand_after(negotiation, "tit-for-tat", conceding, 0.8) < 0.8 - 0.1
    assert _demand_after(negotiation, "hardliner", [OPEN, COOP], 0.9) == pytest.approx(0.885)


# ---------------------------------------------------------------------------- the follower
def test_each_paper_strategy_gives_the_follower_its_own_behaviour():
    talk = {name: stance_for(text).talk for name, text in STRATEGY_SETS[13]}
    assert talk == {
        "none": "", "Integrative Negotiation": "joint", "Reciprocity Trigger": "reciprocity",
        "BATNA Leverage": "pressure", "Strategic Self-Presentation": "credibility",
        "Tit-for-Tat": "", "Rational Choice Persuasion": "argument",
        "Face-Saving Validation": "empathy", "Constructive Controversy": "argument",
        "Outcome Interdependence": "joint", "GRIT": "goodwill",
        "Active Listening Probe": "question", "Logrolling": "",
    }  # fmt: skip
    stances = {name: stance_for(text) for name, text in STRATEGY_SETS[13]}
    assert stances["BATNA Leverage"].opening > stances["none"].opening
    assert stances["GRIT"].step > stances["none"].step > stances["BATNA Leverage"].step
    assert stances["Tit-for-Tat"].reactions.reciprocity == 1.0
    assert stances["Logrolling"].integrative and not stances["none"].integrative


def _play(task, partner: str, before: int, after: int, switch: int = 10):
    env = agentgym.make("Social-v0", partner=partner)
    agent = scripted_agent("follower", env)
    obs, info = env.reset(seed=0, options={"task": task})
    agent.reset(info)
    rewards, said, done, turns = [], [], False, 0
    while not done:
        turns += 1
        text = STRATEGY_SETS[13][before if info["turn"] < switch else after][1]
        action = agent.act(f"Strategy: {text}\n{obs}" if text else obs, info)
        said += [action] if action.startswith("speak") else []
        obs, reward, term, trunc, info = env.step(action)
        rewards.append(info["evaluation"]["normalized"])
        done = term or trunc
    return float(np.mean(rewards)), reward, said, turns


def test_the_follower_does_not_repeat_itself(negotiation):
    _, _, said, _ = _play(negotiation.tasks[0], "scripted:hardliner", 3, 3)
    assert len(said) >= 4 and len(set(said)) == len(said)


# ---------------------------------------------------------------------------- state dependence
FACE, BATNA = 7, 3


def test_the_best_strategy_depends_on_the_partner_and_changes_at_the_switch(negotiation):
    tasks = negotiation.tasks[::20]
    mean = {}
    for partner, before, after in [
        ("switcher?switch=10", FACE, FACE), ("switcher?switch=10", BATNA, BATNA),
        ("switcher?switch=10", FACE, BATNA), ("tit-for-tat", FACE, FACE),
        ("tit-for-tat", BATNA, BATNA), ("conceder", FACE, FACE), ("conceder", BATNA, BATNA),
    ]:  # fmt: skip
        runs = [_play(t, f"scripted:{partner}", before, after) for t in tasks]
        mean[partner.split("?")[0], before, after] = np.mean([r[1] for r in runs])
    sw = {k[1:]: v for k, v in mean.items() if k[0] == "switcher"}
    assert sw[FACE, BATNA] > sw[FACE, FACE] and sw[FACE, BATNA] > sw[BATNA, BATNA]
    assert mean["tit-for-tat", FACE, FACE] > mean["tit-for-tat", BATNA, BATNA] + 0.05
    assert mean["conceder", BATNA, BATNA] > mean["conceder", FACE, FACE]


def _contested(negotiation) -> list:
    """Item divisions and the bargains whose buyer target is below the seller's."""

    def conflict(deal: dict) -> bool:
        targets = dict(zip(deal["roles"], deal["targets"], strict=True))
        return targets["buyer"] < targets["seller"]

    return [
        t for t in negotiation if t.config["deal"]["kind"] != "price" or conflict(t.config["deal"])
    ]


def test_the_switcher_gives_headroom_over_a_plain_arm_0(negotiation):
    """ALSO's CPU check needs a partner where choosing strategies pays: the talk that pays flips
    at the switch, arm 0 (plain proposals) sits in the middle, episodes run their 20 turns."""
    tasks, m, lengths = _contested(negotiation)[::15], {}, []
    for before, after in [(0, 0), (FACE, 0), (BATNA, 0), (0, BATNA), (0, FACE), (FACE, BATNA),
                          (FACE, FACE), (BATNA, BATNA)]:  # fmt: skip
        runs = [_play(t, "scripted:switcher?switch=10", before, after) for t in tasks]
        m[before, after] = np.mean([r[0] for r in runs])
        lengths += [r[3] for r in runs]
    assert m[FACE, 0] > m[0, 0] + 0.01 and m[BATNA, 0] < m[0, 0] - 0.01  # before the switch
    assert m[0, BATNA] > m[0, 0] + 0.01 and m[0, FACE] < m[0, 0] - 0.01  # after it
    assert m[FACE, BATNA] > max(m[0, 0], m[FACE, FACE], m[BATNA, BATNA]) + 0.025
    assert min(lengths) >= 9  # about 10 agent turns: no early settlement
