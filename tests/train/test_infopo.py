"""InfoPO: in-place masking, information gain by teacher forcing, attribution, gate and fusion."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from agentgym.agents import infopo
from agentgym.train.advantages import group_advantages
from agentgym.train.chat import ChatFormat
from agentgym.train.config import AlgoConfig
from agentgym.train.credit import CreditContext, get_credit
from agentgym.train.policy import load_model, load_tokenizer, logprobs_from_logits
from agentgym.train.sft import from_messages


@pytest.fixture(scope="module")
def lm(tiny_model):
    torch.manual_seed(0)
    return load_model(tiny_model), load_tokenizer(tiny_model)


def _episode(tok, observations: list[str], actions: list[str], reward=0.0, group="g"):
    msgs = [{"role": "user", "content": "Which item? ask[color=x] or answer[id]."}]
    for i, a in enumerate(actions):
        msgs.append({"role": "assistant", "content": a})
        if i < len(observations):
            msgs.append({"role": "user", "content": observations[i]})
    ep = from_messages(ChatFormat(tok), msgs, group)
    ep.episode.reward = reward
    return ep


def _placeholder(tok):
    return list(tok(infopo.PLACEHOLDER, add_special_tokens=False)["input_ids"])


def test_overwrite_keeps_positions():
    assert infopo.overwrite([1, 2, 3, 4, 5, 6], 1, 5, [9, 8]) == [1, 9, 8, 8, 8, 6]
    assert infopo.overwrite([1, 2, 3, 4], 1, 3, [9, 8, 7]) == [1, 9, 8, 4]
    assert infopo.overwrite([1, 2, 3], 1, 1, [9]) == [1, 2, 3]
    with pytest.raises(ValueError, match="placeholder"):
        infopo.overwrite([1, 2], 0, 1, [])


def test_feedback_span_is_the_observation_text(lm):
    _, tok = lm
    ep = _episode(tok, ["No. The color is not red.", "Yes."], ["ask[a=b]", "ask[c=d]", "answer[1]"])
    pieces = infopo.obs_pieces(tok)
    for t, text in enumerate(["No. The color is not red.", "Yes."]):
        start, end = infopo.feedback_span(ep, t, pieces)
        assert tok.decode(ep.ids[start:end]) == text
        turn = ep.turns[t]
        assert infopo.feedback_span(ep, t, None) == (turn.obs_start, turn.obs_end)


def _direct_ig(model, ep, t, start, end, placeholder):
    """IG_t computed row by row without batching, as an independent reference."""
    nxt = ep.turns[t + 1]

    def score(ids):
        x = torch.tensor([ids[: nxt.action_end]])
        with torch.no_grad():
            lp = logprobs_from_logits(model(input_ids=x).logits, x)[0][0]
        return lp[nxt.action_start : nxt.action_end].numpy()

    masked = infopo.overwrite(ep.ids, start, end, placeholder)
    return float(np.mean(score(ep.ids) - score(masked)))


def test_information_gain_matches_direct_teacher_forcing(lm):
    model, tok = lm
    eps = [
        _episode(
            tok, ["No.", "Yes, it is blue."], ["ask[color=red]", "ask[color=blue]", "answer[7]"]
        ),
        _episode(tok, ["I don't know."], ["ask[size=big]", "answer[3]"]),
    ]
    pieces, ph = infopo.obs_pieces(tok), _placeholder(tok)
    ig = infopo.information_gain(model, eps, ph, pieces, batch_size=2)
    assert [len(g) for g in ig] == [3, 2]
    assert ig[0][2] == 0.0 and ig[1][1] == 0.0  # no following action
    for e, t in [(0, 0), (0, 1), (1, 0)]:
        start, end = infopo.feedback_span(eps[e], t, pieces)
        assert ig[e][t] == pytest.approx(_direct_ig(model, eps[e], t, start, end, ph), abs=1e-5)
    assert all(abs(ig[e][t]) > 1e-6 for e, t in [(0, 0), (0, 1), (1, 0)])


def test_information_gain_is_zero_when_feedback_is_the_placeholder(lm):
    model, tok = lm
    ep = _episode(tok, [infopo.PLACEHOLDER, "Yes."], ["ask[a=b]", "ask[c=d]", "answer[1]"])
    ig = infopo.information_gain(model, [ep], _placeholder(tok), infopo.obs_pieces(tok))[0]
    assert abs(ig[0]) < 1e-6
    assert abs(ig[1]) > 1e-6


def test_attribution_credits_the_producing_action_and_sums_to_ig(lm):
    _, tok = lm
    ep = _episode(tok, ["No.", "Yes."], ["ask[color=red]", "ask[size=big]", "answer[7]"])
    ig = np.array([0.3, -0.2, 0.0])
    tokens = infopo.attribute(ep, ig)
    for t, turn in enumerate(ep.turns):
        span = tokens[turn.action_start : turn.action_end]
        assert span.sum() == pytest.approx(ig[t])
        assert np.allclose(span, ig[t] / len(span))
    mask = np.asarray(ep.mask, bool)
    assert np.all(tokens[~mask] == 0)
    assert tokens.sum() == pytest.approx(ig.sum())


def test_gate_is_one_half_on_ties_and_falls_with_spread():
    assert infopo.variance_gate([0, 0, 0, 0, 0], 0.5) == 0.5
    assert infopo.variance_gate([1, 1, 1], 0.5) == 0.5
    r = np.array([0, 1, 0, 0, 1.0])
    assert infopo.variance_gate(r, 0.5) == pytest.approx(1 / (1 + np.exp(r.std(ddof=1) / 0.5)))
    assert infopo.variance_gate([0, 1], 0.5) < infopo.variance_gate([0, 0.1], 0.5) < 0.5


def test_fusion_by_hand():
    """Two groups: a tied one (only the gated intrinsic term) and a mixed one; one error."""
    masks = [np.array([0, 1, 1, 0, 1.0])] * 5
    intrinsic = [
        np.array([0, 0.2, 0.2, 0, 0.0]),
        np.array([0, -0.1, -0.1, 0, 0.0]),
        np.array([0, 0.0, 0.0, 0, 0.4]),
        np.array([0, 0.3, 0.3, 0, 0.0]),
        np.array([0, 0.9, 0.9, 0, 0.9]),
    ]
    rewards, groups = [0, 0, 0, 1, 0], ["a", "a", "b", "b", "b"]
    valid = [True, True, True, True, False]
    out, diag = infopo.fuse(rewards, groups, valid, intrinsic, masks, beta=0.5, tau=0.5)
    # group a tied: A_out = 0, gate 0.5; intrinsic tokens [.2,.2,-.1,-.1] normalised
    pooled = np.array([0.2, 0.2, -0.1, -0.1])
    z = (pooled - pooled.mean()) / (pooled.std(ddof=1) + 1e-6)
    factor = min(1.0, 1.0 / z.std(ddof=1))
    assert np.allclose(out[0], [0, 0.25 * factor * z[0], 0.25 * factor * z[1], 0, 0])
    assert np.allclose(out[1], [0, 0.25 * factor * z[2], 0.25 * factor * z[3], 0, 0])
    # group b: A_out = (r - mean)/(std + eps) over the valid two; the gate below 0.5
    a_out = group_advantages([0, 1], ["b", "b"])
    gate = infopo.variance_gate([0, 1], 0.5)
    pooled_b = np.array([0.4, 0.3, 0.3])
    zb = (pooled_b - pooled_b.mean()) / (pooled_b.std(ddof=1) + 1e-6)
    fb = min(1.0, max(a_out.std(ddof=1), 1.0) / zb.std(ddof=1))
    assert np.allclose(
        out[2], masks[2] * a_out[0] + 0.5 * gate * fb * np.array([0, 0, 0, 0, zb[0]])
    )
    assert np.allclose(
        out[3], masks[3] * a_out[1] + 0.5 * gate * fb * np.array([0, zb[1], zb[2], 0, 0])
    )
    assert np.all(out[4] == 0)  # the error episode
    assert diag["infopo_gate"] == pytest.approx((0.5 + gate) / 2)


def test_credit_function_is_registered_and_reads_options(lm):
    model, tok = lm
    eps = [
        _episode(tok, ["No.", "Yes."], ["ask[color=red]", "ask[size=big]", "answer[7]"]),
        _episode(tok, ["Yes."], ["ask[color=blue]", "answer[2]"]),
    ]
    fn = get_credit("infopo")
    algo = AlgoConfig(credit="infopo", options={"beta": 0.5})
    ctx = CreditContext(algo, model, metrics={}, tokenizer=tok)
    out = fn(eps, ctx)
    grpo = get_credit("grpo")(eps, ctx)
    assert all(np.all(g == 0) for g in grpo)  # tied group: GRPO has no signal
    assert any(np.any(o != 0) for o in out)  # InfoPO does
    assert ctx.metrics["infopo_gate"] == 0.5 and ctx.metrics["infopo_turns"] == 3
    with pytest.raises(ValidationError, match="betta"):  # when the config loads
        AlgoConfig(credit="infopo", options={"betta": 1})
    with pytest.raises(ValueError, match="no policy"):
        fn(eps, CreditContext(AlgoConfig()))


def test_trainer_runs_infopo_on_clarify(tiny_model, tmp_path):
    """The trainer's GRPO with ``algo.credit: infopo`` on real Clarify rollouts."""
    from agentgym.train.config import TrainConfig
    from agentgym.train.trainer import Trainer

    cfg = TrainConfig.model_validate(
        {
            "model": {"path": str(tiny_model)},
            "env": {"id": "Clarify-v0", "suite": "clarify/train", "system_prompt": False},
            "rollout": {"tasks_per_step": 1, "group_size": 3, "max_turns": 2, "max_tokens": 4},
            "algo": {"name": "grpo", "credit": "infopo", "options": {"beta": 0.5, "tau": 0.5}},
            "steps": 1,
            "out_dir": str(tmp_path),
            "threads": 1,
        }
    )
    trainer = Trainer(cfg)
    try:
        metrics = trainer.run()
    finally:
        trainer.close()
    assert metrics["infopo_turns"] == 3  # three two-turn episodes: one scored turn each
    assert metrics["acr"] == 1.0 and metrics["infopo_gate"] == 0.5  # all failed, tied
    assert metrics["grad_norm"] > 0  # GRPO alone would have no gradient here


def _tiny_run(tiny_model, results_md, out) -> list[str]:
    """The InfoPO harness's flags for one seed of one step each on the tiny checkpoint, ending
    in ``--out OUT``."""
    return [
        "--model", str(tiny_model), "--model-layers", "2", "--lora-layers", "1", "--lora-r", "4",
        "--seeds", "0", "--sft-steps", "1", "--rl-steps", "1", "--eval-every", "1",
        "--tasks-per-step", "1", "--group-size", "2", "--max-turns", "2", "--eval-tasks", "2",
        "--eval-samples", "1", "--sft-batch", "2", "--results", str(results_md),
        "--out", str(out),
    ]  # fmt: skip


def test_experiment_takes_a_pretrained_checkpoint(tiny_model, tmp_path):
    """``experiments.infopo --model PATH``: both arms train LoRA adapters on the given checkpoint
    (not a tiny model of its own), and the results subsection names it; with ``--out`` a
    finished seed is kept and a rerun reports it without training again."""
    from experiments import infopo

    results_md = tmp_path / "results.md"
    argv = _tiny_run(tiny_model, results_md, tmp_path / "out")
    (result,) = infopo.main(argv)
    assert {"GRPO", "InfoPO", "start"} <= set(result)
    assert (tmp_path / "out" / "GRPO-0" / "final" / "adapter_config.json").is_file()
    (tmp_path / "out" / "GRPO-0" / "final" / "adapter_config.json").unlink()
    assert infopo.main(argv) == [result]  # the finished seed, as it was
    assert not (tmp_path / "out" / "GRPO-0" / "final" / "adapter_config.json").exists()
    changed = [*argv[:-2], "--rl-lr", "0.5", "--out", argv[-1]]
    with pytest.raises(ValueError, match=r"rl_lr: 0\.0005 there, 0\.5 now.*new --out"):
        infopo.main(changed)  # a kept seed is not reported under other settings
    text = results_md.read_text()
    assert f"### After 1 SFT steps, {tiny_model}" in text
    assert "with LoRA r=4 on its top 1 layers" in text
    (kept,) = infopo.main([*argv, "--final-tasks", "2"])  # GRPO's checkpoint is gone
    assert "final" not in kept and not (tmp_path / "out" / "final-0.json").exists()


def test_final_evaluation_pairs_checkpoints_per_task_and_resumes(tiny_model, tmp_path):
    """The final evaluation reads every kept checkpoint on tasks x samples in one job order and
    resumes per checkpoint after a kill."""
    import json

    from experiments import infopo

    results_md = tmp_path / "results.md"
    argv = [*_tiny_run(tiny_model, results_md, tmp_path / "out"), "--final-tasks", "3",
            "--final-samples", "2"]  # fmt: skip
    (result,) = infopo.main(argv)
    saved = tmp_path / "out" / "final-0.json"
    records = json.loads(saved.read_text())
    assert records["settings"] == {"tasks": 3, "samples": 2}
    for stage in ("SFT", "GRPO", "InfoPO"):
        assert [(r["task"], r["sample"]) for r in records[stage]] == [
            (t, k) for t in dict.fromkeys(r["task"] for r in records["SFT"]) for k in (0, 1)
        ]
        assert result["final"][stage] == records[stage]
    assert len({r["task"] for r in records["SFT"]}) == 3
    del records["InfoPO"]  # killed before the last checkpoint was evaluated
    saved.write_text(json.dumps(records))
    (again,) = infopo.main(argv)
    assert again["final"] == result["final"]  # the same job list gives the same episodes
    text = results_md.read_text()
    assert "Final checkpoints on the first 3 test tasks x 2 samples" in text
    assert "| mean of 1 seeds |" in text


def test_final_evaluation_gains_by_hand():
    from experiments.final_eval import gain_rows, per_task_gain, rate

    def recs(wins):
        return [
            {"task": t, "sample": k, "success": w}
            for t, row in zip("ab", wins, strict=True)
            for k, w in enumerate(row)
        ]

    before, after = recs([[True, False], [False, False]]), recs([[True, True], [False, True]])
    assert rate(before) == 0.25 and rate(after) == 0.75
    assert per_task_gain(before, after) == [0.5, 0.5]
    errored = recs([[None, True], [True, True]])
    assert rate(errored) == 1.0 and per_task_gain(errored, after) == [-0.5]
    seeds = [{"seed": 0, "A": before, "B": after}, {"seed": 1, "A": before, "B": before}]
    rows = gain_rows(seeds, ("A", "B"), [("A", "B")])
    assert rows[0] == ["0", "25.0%", "75.0%", "+50.0% [+50.0%, +50.0%]"]
    assert rows[-1][:3] == ["mean of 2 seeds", "25.0%", "50.0%"]
    assert rows[-1][3].startswith("+25.0% [")
