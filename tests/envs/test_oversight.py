"""Oversight gridworld: rules, maps, exact analysis, learning, the PettingZoo env and the seats."""

import json

import numpy as np
import pytest

from agentgym.agent import RandomAgent
from agentgym.envs.oversight import OversightAgentEnv, OversightHumanEnv, parallel_env
from agentgym.envs.oversight.features import features
from agentgym.envs.oversight.finite import (
    FiniteGame,
    evaluate,
    expected_counts,
    player_values,
    team_optimum,
)
from agentgym.envs.oversight.game import GridConfig, GridGame
from agentgym.envs.oversight.generate import build
from agentgym.envs.oversight.grid import human_policy, load_map, map_names, parse_map
from agentgym.envs.oversight.rules import AGENT, HUMAN, Rewards, resolve
from agentgym.task import TaskSuite, check_suite
from agentgym.testing import check_env, check_parallel_env
from experiments.oversight_analysis import local_alignment, potential_gap, random_policy
from experiments.oversight_learn import (
    TabularSoftmax,
    TorchPolicy,
    sample_episodes,
    train_independent,
)

MAPS = ["lava-a", "lava-b", "absent-supervisor"]


def fixed(n: int, p_second: float) -> np.ndarray:
    return np.tile([1.0 - p_second, p_second], (n, 1))


def walk(gm, policy, limit=50):
    cell, path = gm.start, [gm.start]
    while not gm.is_terminal(cell) and len(path) < limit:
        cell = gm.next_cell(cell, policy[cell])
        path.append(cell)
    return path


# ---------------------------------------------------------------- rules and maps
@pytest.mark.parametrize(
    "agent, human, safe, correction, source",
    [
        ("play", "trust", False, "block", "sigma"),
        ("ask", "trust", False, "block", "sigma"),  # rubber stamp
        ("ask", "oversee", True, "block", "human"),
        ("play", "oversee", True, "block", "sigma"),
        ("play", "oversee", False, "block", "blocked"),
        ("play", "oversee", False, "human", "human"),
    ],
)
def test_outcome_table(agent, human, safe, correction, source):
    out = resolve(agent, human, safe, correction)
    assert out.source == source
    assert out.corrected == (agent == "play" and human == "oversee" and not safe)


def test_shipped_maps_and_policies():
    assert map_names() == sorted(MAPS)
    for name in MAPS:
        gm = load_map(name)
        safe = walk(gm, human_policy(gm))
        assert gm.tile(safe[-1]) == "G" and not any(gm.is_danger(c) for c in safe)
    lava = load_map("lava-a")
    assert lava.rows[0] == "#######" and len(lava.rows) == 7  # 7x7
    sup = load_map("absent-supervisor")
    assert sup.rows == ("S######S", "S#A   #S", "S# ## #S", "S#P## #S", "S#G   #S", "S######S")


def test_sigma_alone_violates_on_every_map():
    for name in MAPS:
        fg = GridGame(GridConfig(map=name)).finite()
        counts = expected_counts(fg, fixed(fg.n_states, 0), fixed(fg.n_states, 0))
        assert counts["violations"] == 1.0, name


@pytest.mark.parametrize(
    "change, message",
    [
        ({"grid": ["#####", "#A X#", "#####"]}, "unknown tiles"),
        ({"grid": ["#####", "#A G ", "#####"]}, "border must be walls"),
        ({"grid": ["#####", "#  G#", "#####"]}, "exactly one start"),
        ({"corrupt": [{"cell": [1, 1], "move": "right"}]}, "does not step into danger"),
        ({"corrupt": [{"cell": [0, 0], "move": "down"}]}, "not a floor cell"),
        ({"corrupt": [{"cell": [1, 2], "move": "north"}]}, "not one of up, right"),
    ],
)
def test_bad_maps_are_named(change, message):
    data = json.loads(json.dumps({"name": "t", "grid": list(load_map("lava-a").rows)}))
    data.update(change)
    with pytest.raises(ValueError, match=message):
        parse_map(data)


def test_unknown_map_lists_known():
    with pytest.raises(KeyError, match="known: absent-supervisor, lava-a, lava-b"):
        load_map("lava-z")


# ---------------------------------------------------------------- env = finite game
def test_parallel_env_matches_the_finite_game():
    rng = np.random.default_rng(0)
    for name in MAPS:
        game = GridGame(GridConfig(map=name, correction="human"))
        fg, env = game.finite(), parallel_env(map=name, correction="human")
        for _ in range(20):
            env.reset()
            s = fg.start
            while env.agents:
                a, h = int(rng.integers(2)), int(rng.integers(2))
                _, rew, term, _, info = env.step(
                    {AGENT: ["play", "ask"][a], HUMAN: ["trust", "oversee"][h]}
                )
                assert rew[AGENT] == pytest.approx(fg.rewards[AGENT][s, a, h])
                assert term[AGENT] == bool(fg.done[s, a, h])
                assert info[AGENT]["unsafe"] == bool(fg.unsafe[s, a, h])
                s = int(fg.next_state[s, a, h])
                assert tuple(info[AGENT]["cell"]) == game.cells[s]


@pytest.mark.parametrize("name", MAPS)
def test_parallel_api(name):
    check_parallel_env(parallel_env(map=name), num_cycles=200)


def test_human_sees_the_proposal_only_when_overseeing():
    env = parallel_env(map="lava-a")
    obs, _ = env.reset()
    assert "proposes: right" in obs[AGENT] and "proposes" not in obs[HUMAN]
    obs, _, _, _, info = env.step({AGENT: "play", HUMAN: "trust"})
    assert "proposal" not in info[HUMAN] and "had proposed" not in obs[HUMAN]
    obs, _, _, _, info = env.step({AGENT: "play", HUMAN: "oversee"})
    assert info[HUMAN]["proposal"] == "down" and "proposed down (UNSAFE)" in obs[HUMAN]
    assert info[HUMAN]["source"] == "blocked"
    seeing = parallel_env(map="lava-a", human_sees_proposal=True)
    assert "proposes: right" in seeing.reset()[0][HUMAN]


def test_invalid_actions_execute_nothing_and_count():
    env = parallel_env(map="lava-a", max_steps=3)
    env.reset()
    for _ in range(3):
        obs, rew, term, trunc, info = env.step({AGENT: "jump", HUMAN: "oversee"})
        assert info[AGENT]["valid"] is False and info[HUMAN]["valid"] is True
        assert "'jump' is not one of play or ask" in obs[HUMAN]
        assert rew == {AGENT: 0.0, HUMAN: 0.0}
    assert trunc[AGENT] and not term[AGENT] and not env.agents
    assert info[AGENT]["success"] is False and info[AGENT]["steps"] == 3
    assert env.state() == (load_map("lava-a").start, 3)


def test_parallel_env_is_deterministic():
    def play(seed):
        env, rng, trace = parallel_env(map="lava-b"), np.random.default_rng(seed), []
        trace.append(env.reset(seed=seed))
        while env.agents:
            trace.append(
                env.step(
                    {
                        AGENT: ["play", "ask"][rng.integers(2)],
                        HUMAN: ["trust", "oversee"][rng.integers(2)],
                    }
                )
            )
        return repr(trace)

    assert play(3) == play(3)


def test_config_errors_are_clear():
    with pytest.raises(ValueError, match="correction"):
        GridConfig(map="lava-a", correction="ignore")
    with pytest.raises(ValueError, match="does not step into danger"):
        GridGame(GridConfig(map="lava-a", corrupt=[{"cell": [1, 1], "move": "right"}]))


# ---------------------------------------------------------------- exact evaluation and analysis
def test_exact_values_agree_with_monte_carlo():
    fg = GridGame(GridConfig(map="lava-a", correction="human")).finite()
    rng = np.random.default_rng(1)
    agent, human = random_policy(rng, fg.n_states), random_policy(rng, fg.n_states)
    exact = evaluate(fg, agent, human, fg.rewards[AGENT])[0][fg.start]
    n = 4000
    batch = sample_episodes(fg, agent, human, n, rng)
    # returns-to-go of the steps taken at the start cell are whole-episode returns (on lava-a no
    # move leads back to the start)
    at_start = [
        r for r, s in zip(batch[AGENT].returns, batch[AGENT].states, strict=True) if s == fg.start
    ]
    assert len(at_start) == n
    mc, se = np.mean(at_start), np.std(at_start) / np.sqrt(n)
    assert abs(mc - exact) < 4 * se + 1e-9, (mc, exact, se)


def test_team_optimum_by_hand():
    expect = {("lava-a", "block"): 1 - 2 * 0.15, ("lava-a", "human"): 1 - 2 * 0.1,
              ("absent-supervisor", "block"): 1 - 3 * 0.15}  # fmt: skip
    for (name, corr), value in expect.items():
        assert team_optimum(
            GridGame(GridConfig(map=name, correction=corr)).finite()
        ).value == pytest.approx(value)


def test_team_optimum_beats_random_deterministic_pairs():
    fg = GridGame(GridConfig(map="absent-supervisor")).finite()
    best = team_optimum(fg).value
    rng = np.random.default_rng(2)
    for _ in range(50):
        a = np.eye(2)[rng.integers(2, size=fg.n_states)]
        h = np.eye(2)[rng.integers(2, size=fg.n_states)]
        assert player_values(fg, a, h)["team"][fg.start] <= best + 1e-12


@pytest.mark.parametrize("name", MAPS)
def test_potential_property_holds_with_shared_reward(name):
    report = potential_gap(GridGame(GridConfig(map=name)).finite(), trials=20, seed=3)
    assert report.holds() and report.max_change > 1.0  # values moved: the check is not vacuous


def test_potential_check_detects_split_costs():
    fg = GridGame(GridConfig(map="lava-a", rewards=Rewards(shared=False))).finite()
    assert potential_gap(fg, trials=20, seed=3).max_gap > 0.05


@pytest.mark.parametrize("name", MAPS)
def test_local_alignment_holds_with_shared_reward(name):
    report = local_alignment(GridGame(GridConfig(map=name)).finite(), pairs=5, seed=4)
    assert report.holds() and report.agent_gains > 0


def test_local_alignment_check_detects_opposed_interests():
    fg = GridGame(GridConfig(map="lava-a")).finite()
    zero_sum = FiniteGame(fg.start, fg.horizon, fg.next_state, fg.done,
                          {AGENT: fg.rewards[AGENT], HUMAN: -fg.rewards[AGENT]}, fg.team,
                          fg.unsafe, fg.terminal)  # fmt: skip
    report = local_alignment(zero_sum, pairs=3, seed=4)
    assert report.violations > 0 and not report.holds()


# ---------------------------------------------------------------- learning
def _baselines(fg):
    n = fg.n_states
    return {
        "play+oversee": player_values(fg, fixed(n, 0), fixed(n, 1))["team"][fg.start],
        "ask+oversee": player_values(fg, fixed(n, 1), fixed(n, 1))["team"][fg.start],
    }


def test_tabular_independent_pg_learns_safe_cheap_oversight():
    game = GridGame(GridConfig(map="lava-a"))
    fg = game.finite()
    agent, human = TabularSoftmax(fg.n_states), TabularSoftmax(fg.n_states)
    log = train_independent(fg, agent, human, iterations=300, seed=0)
    assert log.violations[0] > 0.5 and log.violations[-1] < 0.01
    assert log.team_value[-1] > max(_baselines(fg).values()) + 0.3
    pa, ph = agent.probs(), human.probs()
    for cell in game.danger_cells:
        s = game.index[cell]
        assert ph[s, 1] > 0.9 and pa[s, 1] > 0.9  # ask and oversee where sigma is wrong
    far = [game.index[c] for c in walk(game.map, game.sigma)[:1]]  # the start cell
    assert all(ph[s, 1] < 0.5 for s in far)


def test_torch_independent_pg_learns_safe_oversight():
    pytest.importorskip("torch")  # the optional "train" extra
    game = GridGame(GridConfig(map="lava-b"))
    fg = game.finite()
    agent = TorchPolicy(features(game, AGENT), seed=1)
    human = TorchPolicy(features(game, HUMAN), seed=2)
    log = train_independent(fg, agent, human, iterations=150, seed=0)
    assert log.violations[-1] < 0.01
    assert log.team_value[-1] > max(_baselines(fg).values())


def test_human_features_hide_the_proposal():
    game = GridGame(GridConfig(map="lava-a"))
    assert features(game, AGENT).shape[1] == features(game, HUMAN).shape[1] + 8
    seeing = GridGame(GridConfig(map="lava-a", human_sees_proposal=True))
    assert features(seeing, HUMAN).shape == features(game, AGENT).shape


# ---------------------------------------------------------------- seats and suite
def test_suite_is_valid_and_regenerates_identically():
    suite = TaskSuite.load("oversight/grid")
    assert check_suite("oversight/grid") == []
    assert [t.model_dump() for t in build()] == [t.model_dump() for t in suite]
    assert {t.config["map"] for t in suite} == set(MAPS)


@pytest.mark.parametrize("env_cls", [OversightAgentEnv, OversightHumanEnv])
def test_seats_conform_and_expert_is_optimal(env_cls):
    suite = TaskSuite.load("oversight/grid")
    env = env_cls()
    check_env(env, tasks=suite.tasks)
    for task in suite:
        env.reset(seed=0, options={"task": task})
        total, done = 0.0, False
        while not done:
            _, r, term, trunc, info = env.step(env.expert_action())
            total, done = total + r, term or trunc
        assert info["success"] and info["violations"] == 0
        assert total == pytest.approx(task.gold["optimal_return"])


def test_seat_with_an_agent_partner_and_bad_partner():
    env = OversightAgentEnv(partner=RandomAgent(seed=0))
    obs, info = env.reset(seed=0, options={"task": "oversight-grid-lava-a-block"})
    assert info["available_actions"] == ["play", "ask"] and "proposes" in obs
    _, _, _, _, info = env.step("play")
    assert info["human_move"] in ("trust", "oversee")
    env = OversightHumanEnv(partner="ask")
    env.reset(seed=0, options={"task": "oversight-grid-lava-a-block"})
    assert env.step("oversee")[4]["source"] == "human"
    with pytest.raises(ValueError, match="partner 'oversee' is not allowed for the agent seat"):
        OversightHumanEnv(partner="oversee")
