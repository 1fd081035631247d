"""Real `openai` and `litellm` clients against `agentgym serve` over a tiny local model."""

import os

import openai
import pytest

MESSAGES = [{"role": "user", "content": "The user wants one of these 8 movies."}]


@pytest.fixture
def client(served):
    return openai.OpenAI(base_url=served, api_key="unused")


def test_models_endpoint(client):
    assert [m.id for m in client.models.list().data] == ["tiny"]


def test_chat_completion_with_n_logprobs_and_max_tokens(client):
    r = client.chat.completions.create(
        model="tiny", messages=MESSAGES, max_tokens=7, n=3, logprobs=True, temperature=0
    )
    assert len(r.choices) == 3
    assert r.choices[0].message.content == r.choices[1].message.content  # greedy
    assert 0 < r.usage.completion_tokens <= 21 and r.usage.prompt_tokens > 5
    lps = [t.logprob for t in r.choices[0].logprobs.content]
    assert 0 < len(lps) <= 7 and all(lp <= 0 for lp in lps)


def test_sampling_is_seeded(client):
    kwargs = dict(model="tiny", messages=MESSAGES, max_tokens=12, temperature=1.0, seed=7)
    first = client.chat.completions.create(**kwargs).choices[0].message.content
    assert client.chat.completions.create(**kwargs).choices[0].message.content == first


def test_stop_strings_cut_the_text(client):
    full = client.chat.completions.create(
        model="tiny", messages=MESSAGES, max_tokens=12, temperature=0
    )
    text = full.choices[0].message.content
    stop = text[3:5]
    cut = client.chat.completions.create(
        model="tiny", messages=MESSAGES, max_tokens=12, temperature=0, stop=[stop]
    )
    assert cut.choices[0].message.content == text[: text.find(stop)]
    assert cut.choices[0].finish_reason == "stop"


def test_streaming_gives_the_same_text(client):
    whole = client.chat.completions.create(
        model="tiny", messages=MESSAGES, max_tokens=10, temperature=0
    )
    chunks = client.chat.completions.create(
        model="tiny", messages=MESSAGES, max_tokens=10, temperature=0, stream=True
    )
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == whole.choices[0].message.content


def test_tools_are_accepted(client):
    tools = [
        {"type": "function", "function": {"name": "find_user", "parameters": {"type": "object"}}}
    ]
    r = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=5, tools=tools)
    assert r.choices[0].finish_reason in ("stop", "length", "tool_calls")


def test_bad_request_is_a_400_naming_the_field(client):
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model="tiny", messages=[], max_tokens=5)
    with pytest.raises(openai.BadRequestError, match="temperature"):
        client.chat.completions.create(model="tiny", messages=MESSAGES, temperature=5)


def test_litellm_client(served):
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    r = litellm.completion(
        model="openai/tiny",
        api_base=served,
        api_key="unused",
        messages=MESSAGES,
        max_tokens=6,
        temperature=0,
    )
    assert isinstance(r.choices[0].message.content, str) and r.usage.completion_tokens <= 6


def test_our_litellm_backend(served):
    from agentgym.llm import ChatRequest, make_client

    c = make_client(f"litellm:openai/tiny?base_url={served}&api_key=unused")
    r = c.complete(ChatRequest(messages=MESSAGES, max_tokens=6))
    assert r.usage.completion_tokens <= 6 and r.choices[0].message["role"] == "assistant"
