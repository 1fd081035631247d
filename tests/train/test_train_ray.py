"""``--backend ray``: env workers as Ray actors on a local Ray instance give the same episodes."""

from __future__ import annotations

import pytest

from agentgym.llm.engine import load_engine
from agentgym.task import TaskSuite
from agentgym.train.chat import ChatFormat
from agentgym.train.config import RolloutConfig
from agentgym.train.envpool import LocalEnvPool, make_pool
from agentgym.train.policy import load_model, load_tokenizer
from agentgym.train.rollout import Job, collect

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.xdist_group("ray")  # one local Ray instance at a time (tests/conftest.py)


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_pool_gives_the_same_episodes_as_the_local_pool(local_ray, tiny_model):
    model, tok = load_model(tiny_model), load_tokenizer(tiny_model)
    engine = load_engine("local", model, tokenizer=tok)
    chat = ChatFormat(tok, system_prompt=False)
    tasks = TaskSuite.load("clarify/train").filter(["easy"], 3).tasks
    jobs = [Job(t, t.id, k, k) for t in tasks for k in range(2)]
    rollout = RolloutConfig(max_turns=2, max_tokens=6)
    sampling = rollout.for_env()
    pool = make_pool("Clarify-v0", backend="ray", num_workers=2)
    try:
        remote, _ = collect(engine, chat, pool, jobs, rollout, sampling, seed=3)
    finally:
        pool.close()
    local, _ = collect(engine, chat, LocalEnvPool("Clarify-v0"), jobs, rollout, sampling, seed=3)
    assert [e.ids for e in remote] == [e.ids for e in local]
    assert [e.episode.steps[-1].observation for e in remote] == [
        e.episode.steps[-1].observation for e in local
    ]
    assert all(e.ok for e in remote)


def test_ray_pool_rejects_bad_settings(local_ray):
    with pytest.raises(ValueError, match="num_workers must be at least 1"):
        make_pool("Clarify-v0", backend="ray", num_workers=0)
    with pytest.raises(ValueError, match="use 'local' or 'ray'"):
        make_pool("Clarify-v0", backend="dask")
