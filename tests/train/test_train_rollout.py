"""Token-exact rollouts with a real tiny model on Clarify, and the batch layouts built from them."""

from __future__ import annotations

import pytest
import torch

from agentgym.llm.engine import load_engine
from agentgym.task import TaskSuite
from agentgym.train.batch import build_batch, token_weights
from agentgym.train.chat import ChatFormat
from agentgym.train.config import RolloutConfig
from agentgym.train.envpool import LocalEnvPool
from agentgym.train.policy import load_model, load_tokenizer, token_logprobs
from agentgym.train.rollout import Job, collect


@pytest.fixture(scope="module")
def policy(tiny_model):
    torch.manual_seed(0)
    return load_model(tiny_model), load_tokenizer(tiny_model)


@pytest.fixture(scope="module")
def rolled(policy):
    model, tok = policy
    engine = load_engine("local", model, 8, tokenizer=tok)
    chat = ChatFormat(tok, system_prompt=False)
    tasks = TaskSuite.load("clarify/train").filter(["easy"], 2).tasks
    jobs = [Job(t, t.id, k, k) for t in tasks for k in range(2)]
    rollout = RolloutConfig(max_turns=3, max_tokens=8, temperature=1.0)
    pool = LocalEnvPool("Clarify-v0")
    episodes, stats = collect(engine, chat, pool, jobs, rollout, rollout.for_env(), seed=1)
    return episodes, stats, chat


def test_episodes_keep_sampled_ids_masks_and_turn_spans(rolled, policy):
    episodes, stats, chat = rolled
    assert stats.episodes == 4 and stats.generated_tokens > 0
    for ep in episodes:
        ep.check()
        assert ep.ok and len(ep.turns) == len(ep.episode.steps) >= 1
        assert sum(ep.mask) == sum(t.action_end - t.action_start for t in ep.turns)
        assert not any(ep.mask[: ep.prompt_len])
        for turn, step in zip(ep.turns, ep.episode.steps, strict=True):
            assert ep.ids[turn.action_start : turn.action_end] == step.usage.token_ids
            assert not any(ep.mask[turn.obs_start : turn.obs_end])
        first = ep.turns[0]
        assert first.state_key == ep.episode.first_observation


def test_observation_turns_are_the_template_pieces(rolled, policy):
    episodes, _, chat = rolled
    _, tok = policy
    ep = next(e for e in episodes if len(e.turns) > 1)
    turn = ep.turns[0]
    text = tok.decode(ep.ids[turn.obs_start : turn.obs_end])
    assert text.endswith("<|im_end|>\n<|im_start|>assistant\n")
    assert ep.episode.steps[0].observation in text
    # the end-of-turn token is in the action when sampled, otherwise in the observation
    sampled_eos = ep.ids[turn.action_end - 1] == chat.eos_id
    assert text.startswith("<|im_end|>") != sampled_eos


def test_recorded_logprobs_equal_the_training_forward(rolled, policy):
    """No re-tokenisation: the loss sees exactly the sampled tokens and their sampling logprobs."""
    episodes, _, _ = rolled
    model, _ = policy
    batch = build_batch(episodes, None)
    with torch.no_grad():
        logp, _ = token_logprobs(model, batch)
    m = batch.loss_mask.bool()
    assert torch.allclose(logp[m], batch.old_logprobs[m], atol=1e-4)


def test_step_rows_give_the_same_token_logprobs_as_episode_rows(rolled, policy):
    episodes, _, _ = rolled
    model, _ = policy
    whole, steps = build_batch(episodes, None, "episode"), build_batch(episodes, None, "step")
    assert steps.rows == sum(len(e.turns) for e in episodes)
    with torch.no_grad():
        a = token_logprobs(model, whole)[0][whole.loss_mask.bool()]
        b = token_logprobs(model, steps)[0][steps.loss_mask.bool()]
    # rows are ordered by episode then turn, so the masked tokens line up
    assert torch.allclose(a, b, atol=1e-5)


def _agg(batch, values, mode):
    return float((values * token_weights(batch.loss_mask, batch.episode_index, mode)).sum())


def test_loss_aggregation_modes_relate_as_documented(rolled):
    episodes, _, _ = rolled
    whole, steps = build_batch(episodes, None, "episode"), build_batch(episodes, None, "step")

    # any per-token loss: here each token's loss is its episode index + 1, plus its position
    def values(b):
        return (b.episode_index[:, None] + 1).float() + torch.arange(b.input_ids.shape[1]) * 0.01

    # token-mean and episode-mean do not depend on the layout
    for mode in ("token-mean", "episode-mean"):
        assert _agg(whole, values(whole), mode) == pytest.approx(_agg(steps, values(steps), mode))
    # with one row per episode, sequence-mean is episode-mean
    assert _agg(whole, values(whole), "sequence-mean") == pytest.approx(
        _agg(whole, values(whole), "episode-mean")
    )
    # token-mean weighs each episode by its share of the loss tokens
    n = whole.loss_mask.sum(1)
    per_episode = (values(whole) * whole.loss_mask).sum(1) / n
    assert _agg(whole, values(whole), "token-mean") == pytest.approx(
        float((per_episode * n / n.sum()).sum())
    )
    # equal token counts per row: all three agree
    equal = whole.loss_mask.clone()
    equal[:] = 0
    equal[:, 5:9] = 1
    v = values(whole)
    got = {
        m: float((v * token_weights(equal, whole.episode_index, m)).sum())
        for m in ("token-mean", "sequence-mean", "episode-mean")
    }
    assert (
        got["token-mean"]
        == pytest.approx(got["sequence-mean"])
        == pytest.approx(got["episode-mean"])
    )


def test_micro_batches_add_up_to_the_full_batch(rolled, policy):
    episodes, _, _ = rolled
    model, _ = policy
    batch = build_batch(episodes, None, "step", "sequence-mean")
    with torch.no_grad():
        full = float((-token_logprobs(model, batch)[0] * batch.weights).sum())
        parts = sum(
            float((-token_logprobs(model, mb)[0] * mb.weights).sum())
            for mb in batch.micro_batches(3)
        )
    assert parts == pytest.approx(full, rel=1e-5)


def test_unknown_layout_and_mode_are_clear_errors(rolled):
    episodes, _, _ = rolled
    with pytest.raises(ValueError, match="use 'episode' or 'step'"):
        build_batch(episodes, None, "turns")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="token-mean, sequence-mean or episode-mean"):
        build_batch(episodes, None, "episode", "mean")  # type: ignore[arg-type]


def test_an_episode_samples_the_same_text_alone_or_in_any_batch(policy):
    """Seeds follow the job (its seed and the turn), not the batch position (T=1)."""
    model, tok = policy
    chat = ChatFormat(tok, system_prompt=False)
    tasks = TaskSuite.load("clarify/train").filter(["easy"], 3).tasks
    jobs = [Job(t, t.id, k, 100 + 10 * i + k) for i, t in enumerate(tasks) for k in range(2)]
    rollout = RolloutConfig(max_turns=3, max_tokens=8, temperature=1.0)

    def texts(batch, max_batch_size=8):
        engine = load_engine("local", model, max_batch_size, tokenizer=tok)
        pool = LocalEnvPool("Clarify-v0")
        episodes, _ = collect(engine, chat, pool, batch, rollout, rollout.for_env(), seed=1)
        return {ep.episode.seed: ep.ids for ep in episodes}

    together = texts(jobs)
    assert texts([jobs[3]]) == {jobs[3].seed: together[jobs[3].seed]}
    assert texts(jobs[::-1], max_batch_size=2) == together
    assert len({tuple(ids) for ids in together.values()}) == len(jobs)


def test_rollouts_use_the_env_s_sampling_spec(policy):
    """A one-line env stops every action at a newline, as ``agentgym eval``'s agent does."""
    from agentgym.chat_agent import ChatAgent
    from agentgym.llm.sampling import SamplingSpec
    from agentgym.registry import make, spec
    from agentgym.testing import ScriptedClient

    env_class = spec("Household-v0").load()
    rollout = RolloutConfig(max_turns=2, max_tokens=12, top_p=0.9)
    sampling = rollout.for_env(env_class)
    assert sampling == SamplingSpec(max_tokens=12, stop=("\n",), temperature=1.0, top_p=0.9)
    assert type(sampling) is SamplingSpec and hash(sampling) == hash(sampling.for_env())
    agent = ChatAgent(ScriptedClient(["look"]), make("Household-v0"))
    assert (agent.max_tokens, agent.sampling.stop) == (env_class.action_max_tokens, ("\n",))
    assert agent.sampling == SamplingSpec().for_env(env_class)
    model, tok = policy
    engine = load_engine("local", model, tokenizer=tok)
    tasks = TaskSuite.load("household/train").tasks[:3]
    jobs = [Job(t, t.id, 0, i) for i, t in enumerate(tasks)]
    episodes, _ = collect(
        engine, ChatFormat(tok), LocalEnvPool("Household-v0"), jobs, rollout, sampling, seed=0
    )
    actions = [tok.decode(s.usage.token_ids) for ep in episodes for s in ep.episode.steps]
    assert actions and not any("\n" in a for a in actions)
