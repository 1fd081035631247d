"""Parsing the agent's action text: a tool call, or a message to the user.

Accepted tool-call forms (one call per turn, as tau-bench requires):
``{"name": ..., "arguments": {...}}`` (``arguments`` may also be a JSON string, or be called
``kwargs``/``parameters``); OpenAI's ``{"type": "function", "function": {...}}``; an assistant
message ``{"role": "assistant", "tool_calls": [...]}``; a one-element list of any of these; any of
them inside a Markdown code fence or ``<tool_call>...</tool_call>``. ``{"name": "respond",
"arguments": {"content": ...}}`` (tau-bench's respond action) is a message. Any other text is a
message to the user. Text that starts like JSON but does not parse is a malformed tool call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from agentgym import actionjson

_LANG = re.compile(r"[a-zA-Z]*")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
RESPOND = "respond"


@dataclass(frozen=True)
class ToolCall:
    """A parsed tool call."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Message:
    """A message to the user."""

    content: str


@dataclass(frozen=True)
class Malformed:
    """Text that is neither: ``reason`` says what was wrong."""

    reason: str


Parsed = ToolCall | Message | Malformed


def parse_action(text: str) -> Parsed:
    """Classify and parse one action."""
    stripped = text.strip()
    if not stripped:
        return Malformed("The action is empty: send a tool call or a message to the user.")
    if _CONTROL.search(stripped):
        return Malformed("The action contains control characters.")
    inner = unwrap(stripped)
    if inner[:1] in "{[":
        try:
            data = actionjson.loads(inner)
        except ValueError as e:
            return Malformed(f"The tool call is {e}.")
        return from_json(data)
    if inner is not stripped:
        return Malformed("A fenced or <tool_call> block must hold a JSON tool call.")
    return Message(stripped)


def unwrap(text: str) -> str:
    """The JSON inside a Markdown fence or <tool_call> tags wrapping the whole (stripped) text,
    else the text itself. Plain string checks: the anchored lazy regexes they replace took cubic
    time on a tag followed by a run of spaces."""
    if len(text) >= 6 and text.startswith("```") and text.endswith("```"):
        body = text[3:-3]
        return body[_LANG.match(body).end() :].strip()  # type: ignore[union-attr]
    open_tag, close_tag = "<tool_call>", "</tool_call>"
    if (
        len(text) >= len(open_tag + close_tag)
        and text.startswith(open_tag)
        and text.endswith(close_tag)
    ):
        return text[len(open_tag) : -len(close_tag)].strip()
    return text


def from_json(data: Any) -> Parsed:
    """A decoded JSON action as a tool call or message (or why it is neither)."""
    if isinstance(data, list):
        if len(data) != 1:
            return Malformed(f"Make exactly one tool call per turn (got {len(data)}).")
        return from_json(data[0])
    if not isinstance(data, dict):
        return Malformed("A tool call is a JSON object with 'name' and 'arguments'.")
    if "tool_calls" in data:
        return from_json(data["tool_calls"] or [])
    if isinstance(data.get("function"), dict):
        return from_json(data["function"])
    name = data.get("name")
    if not isinstance(name, str) or not name:
        return Malformed("A tool call needs a 'name' (string) and 'arguments' (object).")
    arguments: Any = next((data[k] for k in ("arguments", "kwargs", "parameters") if k in data), {})
    if isinstance(arguments, str):
        try:
            arguments = actionjson.loads(arguments) if arguments.strip() else {}
        except ValueError as e:
            return Malformed(f"The arguments of {name!r} are {e}.")
    if not isinstance(arguments, dict):
        return Malformed(f"The arguments of {name!r} must be a JSON object.")
    if name == RESPOND:
        content = arguments.get("content")
        if not isinstance(content, str) or not content.strip():
            return Malformed("respond needs a non-empty 'content' string.")
        return Message(content)
    return ToolCall(name, arguments)


def format_call(name: str, arguments: dict[str, Any]) -> str:
    """The canonical action text of a tool call."""
    return json.dumps({"name": name, "arguments": arguments})
