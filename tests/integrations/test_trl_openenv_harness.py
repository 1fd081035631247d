"""TRL's OpenEnv harness (``trl.experimental.async_grpo.openenv_harness``) rolls out an env that
``agentgym env serve`` serves: TRL's own ``HarnessRolloutWorker`` (a spawned child process)
samples every turn from a real vLLM server (``/v1/completions``, token ids and logprobs) and
plays through :class:`~agentgym.integrations.openenv.harness.ChatLoopAdapter`; the reward it
scores is the env's own record of the episode. The worker is built as docs/integrations.md
shows it."""

from __future__ import annotations

import functools
import os
import queue
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("openenv")
pytest.importorskip("trl")
pytest.importorskip("vllm", reason="TRL's harness samples from a vLLM server (the vllm extra)")

from accelerate.state import PartialState  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

import agentgym  # noqa: E402
from agentgym.chat_agent import ChatAgent  # noqa: E402
from agentgym.integrations.openenv.harness import (  # noqa: E402
    AgentgymSessionFactory,
    ChatLoopAdapter,
    chatml_response_template,
)
from agentgym.integrations.openenv.server import EnvServerThread, ServeSettings  # noqa: E402
from agentgym.llm.models import resolve_model_path  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),  # vLLM starts in minutes on 2 cores
    pytest.mark.xdist_group("heavy"),  # a vLLM server: never beside the vLLM engine tests
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory):
    """``vllm serve`` of SmolLM2 on this CPU, one core; yields (URL, model path)."""
    model = resolve_model_path("smollm2", announce=False)
    port = _free_port()
    log = tmp_path_factory.mktemp("vllm") / "serve.log"
    env = {**os.environ, "VLLM_CPU_OMP_THREADS_BIND": "0", "VLLM_CPU_KVCACHE_SPACE": "1",
           "OMP_NUM_THREADS": "1"}  # fmt: skip
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
             "--served-model-name", "smollm2", "--port", str(port), "--max-model-len", "4096",
             "--dtype", "float32", "--enforce-eager"],  # fmt: skip
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 800
        while time.monotonic() < deadline:
            assert proc.poll() is None, Path(log).read_text()[-3000:]
            try:
                if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(2)
        else:
            pytest.fail("vLLM did not start in 800 s")
        yield url, model
    finally:
        proc.terminate()
        proc.wait(60)


def test_trl_harness_worker_plays_clarify_over_env_serve(vllm_server):
    from trl.experimental.async_grpo.openenv_harness import HarnessRolloutWorker

    url, model = vllm_server
    server = EnvServerThread(ServeSettings("Clarify-v0"), max_sessions=4)
    tasks = [t.id for t in agentgym.TaskSuite.load("clarify/test").tasks[:1]]
    demonstration = ChatAgent(None, agentgym.make("Clarify-v0")).few_shot
    tokenizer = AutoTokenizer.from_pretrained(model)
    tokenizer.response_template = chatml_response_template()
    worker = HarnessRolloutWorker(
        harness_session_factory=functools.partial(AgentgymSessionFactory, f"openenv:{server.url}"),
        harness_adapter=ChatLoopAdapter(),
        model_name="smollm2",
        dataset=Dataset.from_dict({"prompt": tasks}),
        reward_funcs=[],
        processing_class=tokenizer,
        eos_token_ids=[tokenizer.eos_token_id],
        num_generations=2,
        max_inflight_tasks=2,
        vllm_server_url=url,
        max_tokens=24,
        temperature=1.0,
        max_tool_calling_iterations=4,
    )
    PartialState()  # TRL's worker logs through accelerate, as its trainer sets up
    try:
        worker.start()
        samples = [worker.rollout_buffer.get(timeout=600) for _ in range(2)]
    except queue.Empty:
        pytest.fail("TRL's worker scored no group in 600 s")
    finally:
        worker.stop()
        server.stop()
    for sample in samples:
        assert sample.prompt == tasks[0]  # the dataset row names the task the session plays
        assert sample.completion_mask.sum() > 0  # the sampled tokens of the episode's turns
        assert len(sample.old_log_probs) == len(sample.input_ids)  # vLLM's logprobs, per token
        roles = [m["role"] for m in sample.completion]
        assert roles[0] == "system"  # the env's system prompt, served over GET /agentgym
        first = 1 + len(demonstration)  # the task's first observation, after the demonstration
        assert roles[first] == "user"
        played = roles[first + 1 :]  # each action, then the env's observation of it
        assert played[0::2] == ["assistant"] * len(played[0::2])
        assert played[1::2] == ["user"] * len(played[1::2])
        assert 1 <= len(played[0::2]) <= 4  # max_tool_calling_iterations: the step limit
        # the env's own record of the episode is the reward (Clarify's lies in [0, 1])
        reward = sample.metrics["rewards/harness_reward"]
        assert 0.0 <= reward <= 1.0 and sample.metrics["reward"] == reward
