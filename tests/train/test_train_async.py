"""Asynchronous rollouts (``rollout.mode: async``) on real tiny runs: a worker process samples with
the weights the learner pushes, turns carry the versions that sampled them, the staleness bound
drops, runs resume, bad settings are refused, and the worker never outlives the run."""

from __future__ import annotations

import copy
import subprocess
import sys
import time
from pathlib import Path

import pytest
import test_train_trainer
import torch
from test_train_trainer import _cfg

from agentgym.train.config import load_config
from agentgym.train.engine_sync import recompute_logprobs
from agentgym.train.episode import TokenEpisode
from agentgym.train.trainer import Trainer

noop_tasks = test_train_trainer.noop_tasks
sft_noop = test_train_trainer.sft_noop
"""The NoOp suite and the SFT policy of the trainer's tests (it succeeds sometimes)."""

ASYNC = {"rollout.mode": "async"}


class Watched(Trainer):
    """A trainer that keeps what each step trained on and the weights of every version."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.batches: list[tuple[int, list[TokenEpisode]]] = []
        self.snapshots = {self.step: self._weights()}

    def _weights(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def rl_update(self, episodes, stats):
        self.batches.append((self.step, copy.deepcopy(episodes)))
        metrics = super().rl_update(episodes, stats)
        self.snapshots[self.step + 1] = self._weights()
        return metrics


def _alive(pid: int) -> bool:
    """The process runs (a zombie waiting for its parent's wait counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


def _sampler_gap(model, weights: dict[str, torch.Tensor], ep: TokenEpisode, pad: int) -> float:
    """The largest gap between ``ep``'s sampling logprobs and ``model`` holding ``weights``."""
    model.load_state_dict(weights)
    replay = copy.deepcopy(ep)
    replay.logprobs = list(ep.sampler_logprobs or ep.logprobs)
    return recompute_logprobs(model, [replay], pad, 8, "cpu")["logprob_gap_max"]


def test_the_worker_samples_with_the_weights_of_the_version_it_stamps(
    sft_noop, noop_tasks, tmp_path
):
    final, _ = sft_noop
    trainer = Watched(_cfg(final, noop_tasks, tmp_path, steps=4, **ASYNC))
    try:
        trainer.run()
        worker = trainer._async.process
    finally:
        trainer.close()
    assert not worker.is_alive() and worker.exitcode == 0
    assert [int(row["step"]) for row in trainer.history] == [1, 2, 3, 4]
    assert [s for s, _ in trainer.batches] == [0, 1, 2, 3]
    newest = 0
    checked = set()
    for step, episodes in trainer.batches:
        for ep in episodes:
            versions = {t.version for t in ep.turns}
            assert None not in versions and max(versions) <= step, "never a future version"
            assert step - min(versions) <= 1, "one batch ahead without a bound"
            newest = max(newest, *versions)
            if len(versions) == 1 and any(ep.mask):  # sampled by one version: its weights
                (v,) = versions
                gap = _sampler_gap(
                    trainer.model, trainer.snapshots[v], ep, trainer.tokenizer.pad_token_id
                )
                assert gap < 1e-4, f"step {step}: version {v}'s weights did not sample it"
                checked.add(v)
    assert newest >= 2, "the worker took the learner's weights"
    assert max(checked) >= 1
    moved = [row["logprob_gap_mean"] for row in trainer.history[1:]]
    assert max(moved) > 1e-4, "a batch sampled one update back differs from the learner's"


def test_episodes_past_a_zero_bound_are_dropped_and_counted(sft_noop, noop_tasks, tmp_path):
    final, _ = sft_noop
    bound = {**ASYNC, "rollout.max_staleness": 0}
    trainer = Trainer(_cfg(final, noop_tasks, tmp_path, steps=3, **bound))
    try:
        trainer.run()
    finally:
        trainer.close()
    first, *later = trainer.history
    assert first["stale_dropped"] == 0.0 and first["episodes"] == 12
    dropped = [row["stale_dropped"] for row in later]
    assert sum(dropped) > 0
    for row in later:
        assert row["episodes"] == round(12 * (1 - row["stale_dropped"]))
        assert row["staleness_max"] >= 1 if row["stale_dropped"] else True


def test_an_async_lora_run_resumes_from_its_checkpoint(tiny_model, noop_tasks, tmp_path):
    lora = {"model.lora": {"r": 4, "alpha": 8}, "save_every": 1, **ASYNC}
    trainer = Trainer(_cfg(tiny_model, noop_tasks, tmp_path, steps=2, **lora))
    try:
        trainer.run()
    finally:
        trainer.close()
    resumed = Trainer(_cfg(tiny_model, noop_tasks, tmp_path, steps=4, **lora))
    try:
        assert resumed.step == 2
        resumed.run()
    finally:
        resumed.close()
    assert [int(row["step"]) for row in resumed.history] == [3, 4]
    assert resumed.history[0]["version_min"] == 2.0, "the worker starts from the checkpoint"
    assert resumed.history[1]["version_max"] >= 2.0


@pytest.mark.parametrize(
    ("over", "message"),
    [
        (["rollout.mode=parallel"], r"rollout\.mode.*'sync' or 'async'"),
        (["rollout.mode=async", "algo.name=sft"], r"rollout\.mode async .*'sft' has no rollouts"),
        (["rollout.mode=async", "rollout.harness=python agent.py"], r"rollout\.harness"),
        (["rollout.mode=async", "rollout.engine=vllm"], r"rollout\.engine vllm"),
    ],
)
def test_a_bad_async_setting_is_one_clear_error(over, message):
    base = ["model.path=tiny", "env.id=NoOp-v0", "model.device=cpu"]
    with pytest.raises(ValueError, match=message):
        load_config(None, [*base, *over])


def test_the_worker_is_gone_after_an_error_in_the_learner(sft_noop, noop_tasks, tmp_path):
    final, _ = sft_noop
    trainer = Trainer(_cfg(final, noop_tasks, tmp_path, steps=3, **ASYNC))

    def fail(row):
        raise RuntimeError("the learner fails after its first step")

    trainer.runlog.on_log = fail
    try:
        with pytest.raises(RuntimeError, match="the learner fails"):
            trainer.run()
        pid = trainer._async.process.pid
        assert _alive(pid)
    finally:
        trainer.close()
    assert _gone_within(pid, 1.0)


LEARNER_DIES = """
import os, sys
sys.path[:0] = {paths!r}
from test_train_trainer import _cfg
from agentgym.testing.noop import register_test_envs
from agentgym.train.trainer import Trainer

if __name__ == "__main__":
    register_test_envs()
    trainer = Trainer(_cfg({model!r}, {tasks!r}, {out!r}, steps=5, **{{"rollout.mode": "async"}}))
    trainer.runlog.on_log = lambda row: (print(trainer._async.process.pid, flush=True), os._exit(3))
    trainer.run()
"""


def test_the_worker_exits_when_the_learner_dies_without_closing(tiny_model, noop_tasks, tmp_path):
    here = Path(__file__).parent
    script = tmp_path / "learner.py"
    paths = [str(here.parents[1]), str(here.parent), str(here)]
    script.write_text(
        LEARNER_DIES.format(paths=paths, model=str(tiny_model), tasks=noop_tasks, out=str(tmp_path))
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 3, done.stderr[-2000:]
    pid = int(done.stdout.split()[0])
    assert _gone_within(pid, 10.0), "an orphaned worker stops at its next poll"


def test_a_failing_worker_is_the_learners_error(tiny_model, noop_tasks, tmp_path):
    import shutil

    from agentgym.train.async_rollouts import WorkerFailed

    model = tmp_path / "model"
    shutil.copytree(tiny_model, model)
    trainer = Trainer(_cfg(model, noop_tasks, tmp_path / "out", steps=2, **ASYNC))
    shutil.rmtree(model)  # the worker loads its copy from here at the first step
    try:
        with pytest.raises(WorkerFailed, match="the rollout worker failed:(.|\n)*model"):
            trainer.run()
        worker = trainer._async.process
    finally:
        trainer.close()
    assert not _alive(worker.pid)
