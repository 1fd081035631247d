"""TRL's real GRPOTrainer on an agentgym env through ``agentgym.integrations.trl``."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

import torch  # noqa: E402

import agentgym  # noqa: E402
from agentgym.train.chat import ChatFormat  # noqa: E402

ENV = "TauMock-v0"  # short observations: several turns fit a small completion budget


class Replay:
    """Plays recorded actions (agentgym's own evaluation of the same episode)."""

    def __init__(self, actions: list[str]) -> None:
        self.actions = list(actions)

    def reset(self, info):
        pass

    def act(self, observation, info):
        return self.actions.pop(0)


@pytest.fixture(scope="module")
def two_steps(tiny_model, tmp_path_factory):
    """Two GRPOTrainer steps of the tiny model on TauMock-v0, capturing what TRL trained on."""
    import os

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from transformers import AutoTokenizer
    from trl import GRPOConfig

    from agentgym.integrations.trl import grpo_trainer

    torch.manual_seed(0)
    args = GRPOConfig(
        output_dir=str(tmp_path_factory.mktemp("trl")),
        per_device_train_batch_size=4,
        num_generations=2,
        max_steps=2,
        max_completion_length=200,
        use_cpu=True,
        report_to=[],
        logging_steps=1,
        save_strategy="no",
        seed=0,
        beta=0.0,
    )
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    trainer = grpo_trainer(
        str(tiny_model),
        ENV,
        args,
        limit=4,
        max_turns=4,
        max_tokens=16,
        processing_class=tokenizer,
    )
    captured: list[dict] = []
    scored: list[torch.Tensor] = []
    generate, rewards = trainer._generate_and_score_completions, trainer._calculate_rewards

    def capture_generation(inputs):
        out = generate(inputs)
        episodes = list(trainer.rollout_func.episodes)
        policy_logps = []
        for ep in episodes:  # the policy that sampled this batch: no update has happened yet
            ids = torch.tensor([ep.prompt_ids + ep.completion_ids])
            with torch.no_grad():
                logits = trainer.model(input_ids=ids).logits[0, len(ep.prompt_ids) - 1 : -1]
            policy_logps.append(torch.log_softmax(logits.float(), dim=-1))
        captured.append(
            {**out, "episodes": episodes, "policy_logps": policy_logps, "rewards": scored.pop()}
        )
        return out

    def capture_rewards(*a, **kw):
        got = rewards(*a, **kw)
        scored.append(got.detach().cpu().clone())  # TRL scores inside the generation step
        return got

    trainer._generate_and_score_completions = capture_generation
    trainer._calculate_rewards = capture_rewards
    trainer.train()
    return trainer, tokenizer, captured


def test_two_grpo_steps_ran(two_steps):
    trainer, _, captured = two_steps
    assert trainer.state.global_step == 2
    assert len(captured) == 2
    assert any(len(e.sampled) >= 2 for c in captured for e in c["episodes"]), "no multi-turn"


def test_loss_mask_is_exactly_the_models_sampled_tokens(two_steps):
    """Every row: TRL's loss mask is 1 on each turn's sampled tokens and 0 on every observation
    turn; the masked-in tokens are the policy's samples (their logprobs under the policy are the
    sampling logprobs) and the masked-out ones are the env's observation turns."""
    trainer, tokenizer, captured = two_steps
    chat = ChatFormat(tokenizer)
    for batch in captured:
        loss_mask = batch["completion_mask"] * batch["tool_mask"]
        for row, ep in enumerate(batch["episodes"]):
            n = len(ep.completion_ids)
            assert batch["completion_ids"][row, :n].tolist() == ep.completion_ids
            expected = [0] * n
            for start, end in ep.sampled:
                expected[start:end] = [1] * (end - start)
            assert loss_mask[row, :n].tolist() == expected
            assert loss_mask[row, n:].sum() == 0
            assert len(ep.sampled) == len(ep.actions)
            # the tokens between two actions are the env's observation, as the chat template has it
            env = agentgym.make(ENV)
            ep_local = agentgym.rollout(
                env, Replay(ep.actions), ep.task_id, seed=ep.seed, max_steps=len(ep.actions)
            )
            for k, ((_, end), (start_next, _)) in enumerate(
                zip(ep.sampled, ep.sampled[1:], strict=False)
            ):
                ended_eos = ep.completion_ids[end - 1] == chat.eos_id
                turn = chat.observation(ep_local.steps[k].observation, ended_eos)
                assert ep.completion_ids[end:start_next] == turn
            logps = batch["policy_logps"][row]
            for start, end in ep.sampled:
                for t in range(start, end):
                    policy = float(logps[t, ep.completion_ids[t]])
                    assert policy == pytest.approx(ep.logprobs[t], abs=2e-3)


def test_rewards_equal_agentgyms_own_evaluation_of_the_episodes(two_steps):
    _, _, captured = two_steps
    for batch in captured:
        for row, ep in enumerate(batch["episodes"]):
            env = agentgym.make(ENV)
            local = agentgym.rollout(
                env, Replay(ep.actions), ep.task_id, seed=ep.seed, max_steps=len(ep.actions)
            )
            assert [s.action for s in local.steps] == ep.actions
            assert [s.reward for s in local.steps] == ep.rewards
            assert float(batch["rewards"][row, 0]) == pytest.approx(local.reward)
            if ep.done and local.status == "completed":
                assert (local.success, local.score) == (ep.success, ep.score)


def test_an_extreme_reward_stops_trls_run_before_the_weights(tiny_model, tmp_path):
    """TRL has no error episodes: an env's ``1e308`` reward stops ``train()`` with the refusal,
    and the weights it would have poisoned are unchanged."""
    import os

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from support import extreme_suite
    from transformers import AutoTokenizer
    from trl import GRPOConfig

    from agentgym.integrations.trl import grpo_trainer

    args = GRPOConfig(
        output_dir=str(tmp_path / "trl"),
        per_device_train_batch_size=2,
        num_generations=2,
        max_steps=1,
        max_completion_length=64,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        seed=0,
        beta=0.0,
    )
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    suite = extreme_suite("1e308", length=1)
    trainer = grpo_trainer(
        str(tiny_model),
        "agentgym/ExtremeReward-v0",
        args,
        suite=suite,
        max_turns=1,
        max_tokens=4,
        processing_class=tokenizer,
    )
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    with pytest.raises(RuntimeError, match=r"t0:1e308 failed: .*reward is 1e\+308"):
        trainer.train()
    after = trainer.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def _one_step(model_path, tokenizer, env_id, out, temperature=1.0):
    """A one-step GRPOTrainer of ``model_path`` on ``env_id`` (2 tasks, 2 samples, 3 turns)."""
    import os

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig

    from agentgym.integrations.trl import grpo_trainer

    torch.manual_seed(0)
    args = GRPOConfig(
        output_dir=str(out),
        per_device_train_batch_size=4,
        num_generations=2,
        max_steps=1,
        max_completion_length=200,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        seed=0,
        beta=0.0,
        temperature=temperature,
    )
    return grpo_trainer(
        str(model_path), env_id, args, limit=2, max_turns=3, processing_class=tokenizer
    )


def test_episodes_play_through_the_chat_agents_loop_by_the_envs_stop(tiny_model, tmp_path):
    """Clarify's actions are one line: every sampled span ends with the token that completes the
    newline (or at EOS or the budget), nothing past it is trained on, no action holds a newline.
    The episode is the chat agent's: the prompt opens with Clarify's system prompt and
    demonstration, an empty reply gets the agent's format correction as a user turn (env-masked),
    and the steps are recorded on the episode."""
    from transformers import AutoTokenizer

    from agentgym.chat_agent import ChatAgent

    env_id = "agentgym/Clarify-v0"
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    trainer = _one_step(tiny_model, tokenizer, env_id, tmp_path, temperature=0.05)  # near greedy:
    trainer.train()  # the tiny model then writes newlines (what a stop must cut)
    episodes = trainer.rollout_func.episodes
    chat = ChatFormat(tokenizer)
    env = agentgym.make(env_id)
    cut = corrected = 0
    for ep in episodes:
        obs, _ = env.reset(seed=ep.seed, options={"task": ep.task_id})
        assert ep.prompt_ids == chat.render(ChatAgent(None, env).opening(obs))
        assert ep.record.steps and all("\n" not in a for a in ep.actions)
        for start, end in ep.sampled:
            assert set(ep.env_mask[start:end]) == {1}
            before_last = tokenizer.decode(ep.completion_ids[start : end - 1])
            assert "\n" not in before_last  # the stop ends the span: nothing trained past it
            cut += "\n" in tokenizer.decode(ep.completion_ids[start:end])
        for (_, end), (start, _) in zip(ep.sampled, ep.sampled[1:], strict=False):
            assert set(ep.env_mask[end:start]) == {0}
            corrected += "Format error:" in tokenizer.decode(ep.completion_ids[end:start])
    assert cut, "no sampled action reached the newline: the stop was never exercised"
    assert corrected, "no format correction: the chat agent's loop did not play"


def test_a_chat_template_that_rewrites_history_is_refused_with_the_reason(tiny_model, tmp_path):
    from chat_templates import save_templated
    from transformers import AutoTokenizer

    path = save_templated(tiny_model, "qwen3", tmp_path / "qwen3")
    trainer = _one_step(path, AutoTokenizer.from_pretrained(path), "agentgym/Clarify-v0", tmp_path)
    with pytest.raises(ValueError, match="rewrites history.*one row per prompt"):
        trainer.train()
