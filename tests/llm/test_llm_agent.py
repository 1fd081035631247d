"""ChatAgent parsing, format-error feedback, tool calls, history, cache replay, batched local rollouts."""

import json

import pytest
from pydantic import ValidationError

import agentgym
from agentgym.chat_agent import ChatAgent, ChatAgentConfig, FormatError, chat_agent, parse_action
from agentgym.llm import ChatRequest, make_client
from agentgym.llm.clients import ClientOptions, HFClient
from agentgym.llm.sampling import SamplingSpec, turn_seed
from agentgym.task import TaskSuite
from agentgym.testing import ScriptedClient, noop_suite


@pytest.mark.parametrize(
    "reply, action",
    [
        ("ask[color=blue]", "ask[color=blue]"),
        ("  go to cabinet 1\n", "go to cabinet 1"),
        ("Thought: it is blue.\nAction: ask[color=blue]", "ask[color=blue]"),
        ("think: the mug is hot\nheat mug 1 with microwave 1", "heat mug 1 with microwave 1"),
        ("think: I should look around first", "think: I should look around first"),
        ("I will ask.\n```\nask[size=M]\n```", "ask[size=M]"),
        ("```text\nAction: answer[42]\n```", "answer[42]"),
        (
            "<think>hmm</think><action>Count[#0]</action>",
            "<think>hmm</think><action>Count[#0]</action>",
        ),
    ],
)
def test_parse_text_actions(reply, action):
    assert parse_action({"role": "assistant", "content": reply}) == action


def test_parse_tool_calls_and_free_text():
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "find_user", "arguments": '{"id": 3}'},
    }
    msg = {"role": "assistant", "content": None, "tool_calls": [call]}
    assert json.loads(parse_action(msg)) == {"name": "find_user", "arguments": {"id": 3}}
    two = {"role": "assistant", "tool_calls": [call, call]}
    assert len(json.loads(parse_action(two))) == 2
    text = "Hello!\nCould you tell me your zip code?"
    assert parse_action({"role": "assistant", "content": text}, free_text=True) == text


@pytest.mark.parametrize("reply", ["", "   ", "line one\nline two"])
def test_unusable_replies_are_format_errors(reply):
    with pytest.raises(FormatError):
        parse_action({"role": "assistant", "content": reply})


def test_format_errors_are_explained_and_bounded():
    client = ScriptedClient(["first\nsecond", "a\nb", "still\nbad"])
    agent = ChatAgent(
        client,
        agentgym.make("Clarify-v0"),
        ChatAgentConfig(max_format_errors=2, demonstration=False),
    )
    agent.reset({"seed": 1})
    action = agent.act("obs", {})
    assert action.text == "still\nbad" and agent.format_errors == 3 and len(client.requests) == 3
    feedback = [m["content"] for m in client.requests[-1].messages if m["role"] == "user"]
    assert feedback[1].startswith("Format error: the reply has 2 lines")
    assert action.usage.completion_tokens == 3  # usage of all three calls is counted


def test_system_prompt_hint_seed_and_tool_messages():
    call = {"id": "c9", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    client = ScriptedClient([{"role": "assistant", "content": None, "tool_calls": [call]}, "done"])
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    agent = ChatAgent(client, agentgym.make("Clarify-v0"), hint="The answer is X.")
    agent.reset({"seed": 5, "tools": tools})
    assert json.loads(agent.act("hi", {}).text)["name"] == "lookup"
    agent.act("result: 7", {})
    first, second = client.requests
    assert first.tools == tools
    # each request is seeded by its episode's seed and its turn, not the episode's seed alone
    assert (first.seed, second.seed) == (turn_seed(5, 0), turn_seed(5, 1))
    assert first.seed != second.seed
    assert first.messages[0]["role"] == "system" and first.messages[0]["content"].endswith(
        "The answer is X."
    )
    assert second.messages[-1] == {"role": "tool", "tool_call_id": "c9", "content": "result: 7"}


def test_history_window_keeps_head_and_recent_turns():
    client = ScriptedClient(lambda req: "ask[a=b]")
    agent = ChatAgent(
        client, agentgym.make("Clarify-v0"), ChatAgentConfig(history_turns=2, demonstration=False)
    )
    agent.reset({})
    for i in range(6):
        agent.act(f"obs {i}", {})
    sent = client.requests[-1].messages
    assert [m["content"] for m in sent if m["role"] == "user"] == [
        "obs 0",
        "obs 3",
        "obs 4",
        "obs 5",
    ]
    assert sent[0]["role"] == "system"
    assert "history_turns=2" in agent.act("obs 6", {}).usage.history


def test_env_sets_stop_tokens_and_demonstration():
    client = ScriptedClient(lambda req: "ask[a=b]")
    agent = ChatAgent(client, agentgym.make("Clarify-v0"))
    agent.reset({})
    action = agent.act("the first observation", {})
    request = client.requests[-1]
    assert request.stop == ["\n"] and request.max_tokens == 48  # one-line actions
    roles = [m["role"] for m in request.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    # The demonstration is the expert on clarify/train's first task.
    demo = agentgym.make("Clarify-v0")
    obs, _ = demo.reset(seed=0, options={"task": TaskSuite.load("clarify/train").tasks[0]})
    assert request.messages[1]["content"] == obs
    assert request.messages[2]["content"] == demo.unwrapped.expert_action()
    assert request.messages[-1]["content"] == "the first observation"
    assert action.usage.history is None  # nothing cut
    free = ChatAgent(client, agentgym.make("Swe-v0"), ChatAgentConfig(max_tokens=99))
    free.reset({})
    free.act("obs", {})
    assert client.requests[-1].stop is None and client.requests[-1].max_tokens == 99


def test_sampling_keys_of_an_agent_spec_are_the_sampling_spec_s(tiny_model):
    """The sampling options of ``--agent`` are SamplingSpec's own fields, top_p included; the
    spec an engine request carries is immutable and hashable."""
    client = ScriptedClient(lambda req: "ask[a=b]")
    config = ChatAgentConfig(top_p=0.5, stop=["END"], temperature=0.3, demonstration=False)
    agent = ChatAgent(client, agentgym.make("Clarify-v0"), config)
    agent.reset({})
    agent.act("obs", {})
    request = client.requests[-1]
    assert (request.top_p, request.stop, request.temperature) == (0.5, ["END"], 0.3)
    assert agent.sampling == SamplingSpec(max_tokens=48, stop=("END",), temperature=0.3, top_p=0.5)
    assert hash(agent.sampling) == hash(SamplingSpec(**dict(agent.sampling)))
    with pytest.raises(ValidationError, match="frozen"):
        agent.sampling.temperature = 1.0  # type: ignore[misc]
    assert chat_agent(f"hf:{tiny_model}?top_p=0.9&max_tokens=4", None).sampling.top_p == 0.9


@pytest.mark.parametrize(
    ("old", "new"), [("context_tokens", "max_context_tokens"), ("max_new_tokens", "max_tokens")]
)
def test_a_renamed_agent_option_is_refused_naming_the_new_one(tiny_model, old, new):
    with pytest.raises(ValueError) as refused:
        chat_agent(f"hf:{tiny_model}?{old}=400", None)
    assert str(refused.value) == f"agent option {old!r} was renamed to {new!r}"


def test_env_that_parses_replies_gets_them_whole():
    """Social-v0 reads ``action: offer $610`` as an offer; cutting its ``action:`` as an
    ``Action:`` line would send ``offer $610``, which that env reads as speech."""
    env = agentgym.make("Social-v0")
    obs, info = env.reset(seed=0)
    agent = ChatAgent(ScriptedClient(lambda req: "action: reject"), env)
    agent.reset(info)
    assert agent.act(obs, info).text == "action: reject"
    clarify = ChatAgent(ScriptedClient(lambda req: "Action: ask[a=b]"), agentgym.make("Clarify-v0"))
    clarify.reset({})
    assert clarify.act("obs", {}).text == "ask[a=b]"


def test_context_window_drops_oldest_exchanges_and_records_it():
    client = ScriptedClient(lambda req: "ask[a=b]")
    config = ChatAgentConfig(max_context_tokens=400, max_tokens=50, demonstration=False)
    agent = ChatAgent(client, agentgym.make("Clarify-v0"), config)
    agent.reset({})
    histories = [agent.act(f"observation {i} " + "x" * 400, {}).usage.history for i in range(6)]
    assert histories[0] is None and "dropped" in histories[-1]
    sent = client.requests[-1].messages
    users = [m["content"] for m in sent if m["role"] == "user"]
    assert users[0].startswith("observation 0") and users[-1].startswith("observation 5")
    assert len(users) < 6  # older exchanges left out
    assert sent[len(sent) - 2 * (len(users) - 1)]["role"] == "user"  # starts on a whole exchange


def test_hf_agent_spec_batches_concurrent_episodes(tiny_model, tmp_path):
    spec = f"hf:{tiny_model}?max_tokens=4&max_batch_size=16"
    result = agentgym.evaluate(noop_suite(16, length=2), spec, concurrency=16, db=tmp_path / "b.db")
    eps = list(result.store.episodes(result.run_id))
    assert len(eps) == 16 and all(e.status != "error" for e in eps)
    step = eps[0].steps[0]
    assert step.usage.token_ids and len(step.usage.token_ids) <= 4 and step.usage.prompt_tokens > 0
    client = make_client(f"hf:{tiny_model}?max_batch_size=16")
    assert isinstance(client, HFClient) and max(client.engine.batch_sizes) > 1


def test_cache_replays_calls_exactly(tiny_model, tmp_path):
    options = ClientOptions(cache=str(tmp_path / "cache.sqlite"))
    client = HFClient(str(tiny_model), options)
    request = ChatRequest(
        messages=[{"role": "user", "content": "hi"}], max_tokens=5, temperature=1.0, seed=3
    )
    first = client.complete(request)
    again = client.complete(request)
    assert again.cached and again.choices == first.choices and client.calls == 1
    other_seed = client.complete(request.model_copy(update={"seed": 4}))
    assert not other_seed.cached and client.calls == 2


def test_bad_specs_name_what_is_allowed(tiny_model):
    with pytest.raises(ValueError, match="bad model spec 'gpt4'"):
        make_client("gpt4")
    with pytest.raises(ValueError, match=r"unknown client option\(s\) \['colour'\]"):
        make_client(f"hf:{tiny_model}?colour=red")
    with pytest.raises(FileNotFoundError, match="agentgym model init"):
        make_client("hf:/no/such/dir")
    with pytest.raises(
        ValueError,
        # other agents registered in the same process (the docs' register_agent example) may sit
        # between the built-in prefixes
        match=r"allowed: expert, human, random, .*hf:\.\.\., (\S+, )*litellm:\.\.\., "
        r"(\S+, )*openai:\.\.\.",
    ):
        agentgym.agent_factory("claude:opus")
