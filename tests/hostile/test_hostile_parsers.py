"""Every parser of model or user text runs in linear time.

Two kinds of probe per parser: 1 MB of the input that made the old backtracking regex quadratic
(or cubic), checked for the right answer (a quadratic parser does not finish within the suite's
per-test timeout; speed itself is measured by ``benchmarks/parsers.py``); and small random texts on
which the linear scanner must agree with the regex it replaced.
"""

from __future__ import annotations

import random
import re

import pytest

import agentgym
from agentgym.chat_agent import FormatError, parse_action
from agentgym.envs.kbqa import actions as kbqa
from agentgym.envs.social import llm_judge, llm_partner
from agentgym.envs.tooluse import actions as tooluse
from agentgym.llm.clients import parse_tool_calls
from agentgym.textscan import fenced_blocks, remove_spans, tag_blocks, tag_spans

MB = 1_000_000


def _texts(tokens: list[str], n: int = 1500, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(tokens) for _ in range(rng.randint(0, 12))) for _ in range(n)]


# ------------------------------------------------------------------ 1 MB adversarial inputs
def test_kbqa_repeated_unclosed_tags():
    for tag in ("<action>", "<answer>", "<think>", "<ACTION>"):
        parsed = kbqa.parse(tag * (MB // len(tag)))
        assert isinstance(parsed, kbqa.ParseError)


def test_kbqa_tagged_format_with_many_closings():
    text = "<think>" + "</think><action>" * (MB // 16) + "<answer>m.0123456789</answer>"
    parsed = kbqa.parse(text)
    assert isinstance(parsed, kbqa.Action) and parsed.op == "answer" and not parsed.tagged
    good = "<think>" + "x" * MB + "</think>\n<action>Count[#0]</action>"
    assert kbqa.parse(good) == kbqa.Action("count", ("#0",), tagged=True)


def test_kbqa_env_steps_through_a_megabyte_of_tags():
    env = agentgym.make("agentgym/KBQA-v0")
    env.reset(seed=0)
    obs, _, _, _, info = env.step("<action>" * (MB // 8))
    assert info["valid"] is False and "close every" in obs


@pytest.mark.parametrize("run", ["\n", " \n", "\r\n"])
def test_chat_agent_action_line_on_newline_runs(run):
    with pytest.raises(FormatError, match="2 lines"):
        parse_action({"role": "assistant", "content": "go" + run * (MB // len(run)) + "look"})
    reply = "thinking" + run * (MB // len(run)) + "Action: go north"
    assert parse_action({"role": "assistant", "content": reply}) == "go north"


def test_chat_agent_unclosed_fence_with_a_long_language_word():
    text = "x\n```" + "a" * MB
    with pytest.raises(FormatError):
        parse_action({"role": "assistant", "content": text})
    assert parse_action({"role": "assistant", "content": text + "\n```\nAction: wait"}) == "wait"


@pytest.mark.parametrize(
    "text",
    ["<tool_call>" + " " * MB + "x", "```" + "a" * MB + "x", "```json" + " " * MB + "}"],
)
def test_tooluse_unwrap_on_spaces_and_letters(text):
    assert tooluse.unwrap(text) == text
    assert isinstance(tooluse.parse_action(text), tooluse.Message)


def test_bfcl_env_steps_through_a_tag_and_a_megabyte_of_spaces():
    env = agentgym.make("agentgym/BFCL-v0")
    env.reset(seed=0)
    obs, _, _, _, info = env.step("<tool_call>" + " " * MB + "\nx")
    assert info["valid"] is False and obs


def test_generated_tool_calls_with_unclosed_tags():
    text = "<tool_call>{" * (MB // 12)
    assert parse_tool_calls(text) == {"role": "assistant", "content": text}
    call = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
    message = parse_tool_calls("<tool_call>{" * (MB // 12) + call)
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["f"]
    assert message["content"] == "<tool_call>{" * (MB // 12)


def test_social_partner_and_judge_on_repeated_braces_and_fences():
    assert llm_partner.extract_action(
        "{" + '"action_type"' * (MB // 13)
    ) == "{" + '"action_type"' * (MB // 13)
    with pytest.raises(ValueError, match="not a JSON object"):
        llm_judge._json_object("```{" * (MB // 4))


# ------------------------------------------------------------------ agreement with the old regexes
_OLD_TAG = r"<{0}>(.*?)</{0}>"
_OLD_FORMAT = re.compile(
    r"\s*<think>.*?</think>\s*(<action>.*?</action>|<answer>.*?</answer>)\s*", re.DOTALL
)
_KBQA_TOKENS = [
    "<think>",
    "</think>",
    "<action>",
    "</action>",
    "<Answer>",
    "</answer>",
    " ",
    "\n",
    "x",
    "<",
    ">",
]


def test_tag_scanner_agrees_with_the_lazy_regex():
    for text in _texts(_KBQA_TOKENS):
        for tag in ("think", "action", "answer"):
            old = re.findall(_OLD_TAG.format(tag), text, re.DOTALL | re.IGNORECASE)
            assert tag_blocks(text, f"<{tag}>", f"</{tag}>", ignore_case=True) == old, text
        removed = re.sub(_OLD_TAG.format("think"), "", text, flags=re.DOTALL | re.IGNORECASE)
        spans = tag_spans(text, "<think>", "</think>", ignore_case=True)
        assert remove_spans(text, spans) == removed, text


def test_kbqa_tagged_check_agrees_with_the_old_format_regex():
    for text in _texts(_KBQA_TOKENS, n=4000):
        assert kbqa._tagged(text) == (_OLD_FORMAT.fullmatch(text) is not None), repr(text)


def test_fence_scanner_agrees_with_the_lazy_regex():
    old = re.compile(r"```[a-zA-Z]*\n?(.*?)```", re.DOTALL)
    for text in _texts(["```", "`", "bash", "\n", "x", " "]):
        assert fenced_blocks(text) == old.findall(text), repr(text)


def test_action_line_agrees_with_the_old_regex():
    old = re.compile(r"^\s*action\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
    new = re.compile(r"^[^\S\n]*action\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
    for text in _texts(["Action", ":", " ", "\n", "\t", "go", "x"], n=3000):
        assert new.findall(text) == old.findall(text), repr(text)


def test_tooluse_unwrap_agrees_with_the_old_regexes():
    fence = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)
    tag = re.compile(r"^<tool_call>\s*(.*?)\s*</tool_call>$", re.DOTALL)
    tokens = ["```", "json", "<tool_call>", "</tool_call>", " ", "\n", "{}", "x"]
    for text in (t.strip() for t in _texts(tokens, n=3000)):
        match = fence.match(text) or tag.match(text)
        assert tooluse.unwrap(text) == (match.group(1).strip() if match else text), repr(text)


def test_judge_fence_agrees_with_the_greedy_regex():
    old = re.compile(r"```(?:json)?\s*(\{.*\})\s*```", re.DOTALL)
    for text in _texts(["```", "json", "{", "}", " ", "\n", "x"], n=3000):
        match = old.search(text)
        assert llm_judge._fenced_object(text) == (match.group(1) if match else None), repr(text)


def test_partner_scanner_agrees_with_the_old_regex():
    old = re.compile(r"\{[^{}]*\"action_type\"[^{}]*\}", re.DOTALL)
    for text in _texts(["{", "}", '"action_type"', ":", "x", " "]):
        expected = old.findall(text)
        assert llm_partner.extract_action(text) == (expected[-1] if expected else text.strip())
