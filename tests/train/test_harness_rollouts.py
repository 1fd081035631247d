"""Token-exact training across chat templates, in the trainer's rollouts and in harness rollouts
through the recording gateway: trained tokens are the sampled ones, recomputed logprobs match the
engine's, and a template that rewrites history trains a row per call."""

from __future__ import annotations

import dataclasses
import sys
import warnings
from pathlib import Path

import pytest
import torch

from agentgym.llm.engine import LocalEngine
from agentgym.llm.sampling import SamplingSpec
from agentgym.task import TaskSuite
from agentgym.train.batch import build_batch, row_spans
from agentgym.train.chat import ChatFormat
from agentgym.train.config import RolloutConfig, TrainConfig
from agentgym.train.engine_sync import recompute_logprobs
from agentgym.train.envpool import LocalEnvPool
from agentgym.train.harness import HarnessRollouts
from agentgym.train.policy import token_logprobs
from agentgym.train.rollout import Job, collect
from agentgym.train.trainer import Trainer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "harnesses"
sys.path[:0] = [str(Path(__file__).parents[1]), str(EXAMPLES)]
from chat_loop import play  # noqa: E402
from chat_templates import TEMPLATES, save_templated, templated  # noqa: E402

HARNESS = f"python {EXAMPLES / 'chat_loop.py'}"
ENV = "agentgym/Clarify-v0"
ROLLOUT = RolloutConfig(max_turns=3, max_tokens=6)
SAMPLING = ROLLOUT.for_env()
"""No stop string: the gateway continues a reply cut at one by rendering afresh (a row per
call), where the trainer's own rollouts keep one sequence; without, both make the same rows."""


def _jobs() -> list[Job]:
    tasks = TaskSuite.load("clarify/train").filter(["easy"], 2).tasks
    return [Job(t, t.id, k, 100 + 10 * i + k) for i, t in enumerate(tasks) for k in range(2)]


def _largest_gap(model, episodes, pad_id) -> float:
    """Largest |logprob the model gives now - logprob the engine recorded| on trained tokens."""
    batch = build_batch(episodes, None, "episode", "token-mean", pad_id)
    with torch.no_grad():
        logp, _ = token_logprobs(model.eval(), batch)
    only = batch.loss_mask > 0
    return float((logp.float() - batch.old_logprobs).abs()[only].max())


def _trained_per_episode(episodes) -> list[list[int]]:
    """Per episode, the ids its rows carry loss on, in order."""
    batch = build_batch(episodes, None, "episode")
    out: list[list[int]] = [[] for _ in episodes]
    for r, i in enumerate(batch.episode_index.tolist()):
        out[i] += batch.input_ids[r][batch.loss_mask[r] > 0].tolist()
    return out


def _rows_per_episode(episodes) -> list[int]:
    spans = row_spans(episodes, "episode")
    return [sum(1 for s in spans if s[0] == i) for i in range(len(episodes))]


@pytest.fixture(scope="module", params=list(TEMPLATES))
def variant(request, tiny_model):
    model, tok = templated(tiny_model, request.param)
    engine = LocalEngine.from_model(model, tok, max_batch_size=8)
    yield request.param, model, tok, engine
    engine.close()


def test_trainer_rollouts_train_the_sampled_tokens_in_every_template(variant):
    name, model, tok, engine = variant
    chat = ChatFormat(tok)
    assert chat.rewrites_history == (name == "qwen3")
    episodes, _ = collect(engine, chat, LocalEnvPool(ENV), _jobs(), ROLLOUT, SAMPLING, seed=1)
    assert all(ep.ok and ep.turns for ep in episodes)
    for ep, trained in zip(episodes, _trained_per_episode(episodes), strict=True):
        assert trained == [i for s in ep.episode.steps for i in s.usage.token_ids]
    rows = _rows_per_episode(episodes)
    expected = [len(ep.turns) if name == "qwen3" else 1 for ep in episodes]
    assert rows == expected and (name != "qwen3" or max(rows) > 1)
    if chat.rewrites_history:  # each turn's prompt is the template's own rendering of the chat
        for ep in episodes:
            turn = ep.turns[-1]
            text = tok.decode(ep.ids[turn.context_start : turn.action_start])
            assert text.endswith("<|im_start|>assistant\n<think>\n")
            assert "<think>" not in text[: -len("<think>\n")]  # earlier replies: no opener
    assert _largest_gap(model, episodes, tok.pad_token_id) < 1e-5
    # vLLM rollouts' rescoring writes each row's logprobs back where they belong
    first = recompute_logprobs(model, episodes, tok.pad_token_id, 4, "cpu")
    again = recompute_logprobs(model, episodes, tok.pad_token_id, 4, "cpu")
    assert first["logprob_gap_max"] < 1e-5 and again["logprob_gap_max"] < 1e-6


def test_harness_rollouts_train_the_sampled_tokens_in_every_template(variant, tmp_path):
    name, model, tok, engine = variant
    harness = HarnessRollouts(play, engine, ENV, {}, tmp_path, lambda: "v0")
    try:
        episodes, stats = harness.collect(_jobs(), ROLLOUT, SAMPLING)
        calls = {s: harness.recorder.calls(s) for s in harness.recorder.sessions()}
    finally:
        harness.close()
    assert all(ep.ok and ep.turns for ep in episodes), [ep.episode.error for ep in episodes]
    assert stats.generated_tokens == sum(sum(ep.mask) for ep in episodes)
    by_session = list(calls.values())
    for ep, trained, made in zip(episodes, _trained_per_episode(episodes), by_session, strict=True):
        assert trained == [i for c in made for i in c.completion_ids]
        assert len(made) == len(ep.episode.steps) == len(ep.turns)
        for call in made:  # what the agent read back is the text of the trained tokens
            assert tok.decode(call.completion_ids, skip_special_tokens=True) == call.text
            if call.parent is None:  # rendered afresh: the template's own ids for the chat
                assert call.prompt_ids == ChatFormat(tok).render(call.messages)
    rewritten = [ep.per_call for ep in episodes]
    if name == "qwen3":
        assert all(ep.per_call for ep in episodes if len(ep.turns) > 1) and any(rewritten)
        assert all(c.parent is None for m in by_session for c in m)
    if name in ("chatml-qwen2.5", "mistral"):  # nothing re-read differently: one sequence each
        assert not any(rewritten)
    assert _rows_per_episode(episodes) == [len(ep.turns) if ep.per_call else 1 for ep in episodes]
    assert _largest_gap(model, episodes, tok.pad_token_id) < 1e-5


def test_the_trainer_says_once_that_it_trains_a_row_per_call(tiny_model, tmp_path):
    path = save_templated(tiny_model, "qwen3", tmp_path / "qwen3")
    cfg = TrainConfig.model_validate(
        {
            "model": {"path": str(path)},
            "env": {"id": ENV, "suite": "clarify/train", "tags": ["easy"], "limit": 2},
            "rollout": {"tasks_per_step": 2, "group_size": 2, "max_turns": 2, "max_tokens": 4},
            "algo": {"skip_zero_advantage": False},
            "steps": 2,
            "out_dir": str(tmp_path / "run"),
            "threads": 1,
        }
    )
    trainer = Trainer(cfg)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trainer.run()
    finally:
        trainer.close()
    said = [w for w in caught if "one row per model call" in str(w.message)]
    assert len(said) == 1 and "chat template rewrites earlier turns" in str(said[0].message)
    assert trainer.history[-1]["trained_rows"] > cfg.rollout.tasks_per_step * 2


@pytest.fixture(scope="module")
def chatml(tiny_model):
    from agentgym.train.policy import load_model, load_tokenizer

    torch.manual_seed(0)
    model, tok = load_model(tiny_model), load_tokenizer(tiny_model)
    engine = LocalEngine.from_model(model, tok, max_batch_size=8)
    yield model, tok, engine
    engine.close()


def _to_last_action(episodes):
    """The episodes up to their last sampled token: the trainer's rollouts also keep the
    observation that answered the last action, context no loss reads (an agent program makes no
    call after it, so the gateway never sees it)."""
    out = []
    for ep in episodes:
        end = ep.turns[-1].action_end
        last = dataclasses.replace(ep.turns[-1], obs_start=end, obs_end=end)
        out.append(dataclasses.replace(ep, ids=ep.ids[:end], mask=ep.mask[:end],
                                       logprobs=ep.logprobs[:end], turns=[*ep.turns[:-1], last]))  # fmt: skip
    return out


def test_chat_loop_in_process_and_external_harness_give_identical_rows(chatml, tmp_path):
    """The same episodes (tasks, env seeds, request seeds) played by the trainer's chat loop and
    by an agent program in its own process that talks to the gateway give the same rows."""
    model, tok, engine = chatml
    jobs = _jobs()
    inside, _ = collect(engine, ChatFormat(tok), LocalEnvPool(ENV), jobs, ROLLOUT, SAMPLING, seed=1)
    harness = HarnessRollouts(HARNESS, engine, ENV, {}, tmp_path, lambda: "v0", parallel=2)
    try:
        outside, _ = harness.collect(jobs, ROLLOUT, SAMPLING)
    finally:
        harness.close()
    assert all(ep.ok for ep in outside), [ep.episode.error for ep in outside]
    a, b = build_batch(_to_last_action(inside), None), build_batch(outside, None)
    assert torch.equal(a.input_ids, b.input_ids) and torch.equal(a.loss_mask, b.loss_mask)
    assert torch.equal(a.attention_mask, b.attention_mask)
    assert torch.allclose(a.old_logprobs, b.old_logprobs, atol=1e-6, rtol=0)
    assert [e.episode.reward for e in inside] == [e.episode.reward for e in outside]
    assert [[s.action for s in e.episode.steps] for e in inside] == [
        [s.action for s in e.episode.steps] for e in outside
    ]


class _Checked(Trainer):
    """The trainer, checking every rollout batch against the gateway's recording before its
    update (the weights then are those that sampled it)."""

    checks: list[dict[str, float]]

    def rl_update(self, episodes, stats):
        ok = [ep for ep in episodes if ep.ok and ep.turns]
        recorder = self.harness.recorder
        sessions = recorder.sessions()[-len(episodes) :]
        trained = _trained_per_episode(ok)
        calls = [recorder.calls(s) for s, ep in zip(sessions, episodes, strict=True) if ep.ok]
        first = calls[0][0]
        again = self.engine.generate(
            first.prompt_ids,
            SamplingSpec(
                max_tokens=first.request["max_tokens"],
                temperature=first.request["temperature"],
                stop=first.request["stop"],
            ),
            seed=first.request["seed"],
            keep_eos=True,
        )
        self.checks.append(
            {
                "episodes": len(ok),
                "engine_ids_recorded": again.token_ids == first.completion_ids,
                "mask_is_sampled": all(
                    t == [i for c in made for i in c.completion_ids]
                    for t, made in zip(trained, calls, strict=True)
                ),
                "gap": _largest_gap(self.model, ok, self.tokenizer.pad_token_id),
                "versions": sorted({c.policy_version for made in calls for c in made}),
            }
        )
        self.model.train()
        return super().rl_update(episodes, stats)


def test_an_external_harness_trains_two_grpo_steps_through_the_gateway(tiny_model, tmp_path):
    cfg = TrainConfig.model_validate(
        {
            "model": {"path": str(tiny_model)},
            "env": {"id": ENV, "suite": "clarify/train", "tags": ["easy"], "limit": 2},
            "rollout": {
                "tasks_per_step": 1,
                "group_size": 2,
                "max_turns": 2,
                "max_tokens": 4,
                "harness": HARNESS,
                "harness_parallel": 2,
            },
            "algo": {"name": "grpo", "skip_zero_advantage": False},
            "steps": 2,
            "out_dir": str(tmp_path / "run"),
            "threads": 1,
        }
    )
    trainer = _Checked(cfg)
    trainer.checks = []
    try:
        trainer.run()
    finally:
        trainer.close()
    assert [c["versions"] for c in trainer.checks] == [["step-0"], ["step-1"]]
    for check in trainer.checks:
        assert check["episodes"] == 2 and check["engine_ids_recorded"] and check["mask_is_sampled"]
        assert check["gap"] < 1e-5
    assert len(trainer.history) == 2 and all(row["loss_tokens"] > 0 for row in trainer.history)


def test_a_failing_harness_is_an_error_episode_with_its_stderr(chatml, tmp_path):
    _, _, engine = chatml
    broken = "python -c \"import sys; sys.stderr.write('agent broke'); sys.exit(3)\""
    harness = HarnessRollouts(broken, engine, ENV, {}, tmp_path, lambda: "v0")
    try:
        episodes, _ = harness.collect(_jobs()[:1], ROLLOUT, SAMPLING)
    finally:
        harness.close()
    (ep,) = episodes
    assert not ep.ok and "exited 3" in ep.episode.error and "agent broke" in ep.episode.error


def test_harness_rollouts_refuse_what_the_program_cannot_honour(tiny_model, tmp_path):
    base = {
        "model": {"path": str(tiny_model)},
        "env": {"id": ENV},
        "rollout": {"harness": "python agent.py", "history": 2},
        "algo": {"layout": "step"},
    }
    with pytest.raises(ValueError, match="rollout.harness: the agent program builds its own"):
        TrainConfig.model_validate(base)
