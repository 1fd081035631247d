"""OpenAI tool schemas from typed Python functions and their Google-style docstrings."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from functools import cache
from typing import Any

from pydantic import Field, create_model

from agentgym.envs.tooluse.cow import json_copy

_SECTION = re.compile(r"^\s*(Args|Returns|Raises|Example|Examples|Note):\s*$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(description, {argument: description}) from a Google-style docstring."""
    lines = inspect.cleandoc(doc or "").splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    section, current = "", ""
    for line in lines:
        match = _SECTION.match(line)
        if match:
            section, current = match.group(1), ""
            continue
        if not section:
            description.append(line.strip())
        elif section == "Args":
            head = re.match(r"^\s{0,8}(\w+)\s*(\([^)]*\))?:\s*(.*)$", line)
            if head and (line.startswith("    ") and not line.startswith("        ")):
                current = head.group(1)
                args[current] = head.group(3).strip()
            elif current and line.strip():
                args[current] = f"{args[current]} {line.strip()}".strip()
    return " ".join(d for d in description if d).strip(), args


def tool_schema(name: str, func: Callable[..., Any], skip: int = 1) -> dict[str, Any]:
    """The OpenAI ``{"type": "function", ...}`` schema of ``func`` (its first ``skip`` params dropped)."""
    return json_copy(_tool_schema(name, func, skip))


@cache
def _tool_schema(name: str, func: Callable[..., Any], skip: int) -> dict[str, Any]:
    description, arg_docs = parse_docstring(func.__doc__ or "")
    params = list(inspect.signature(func).parameters.values())[skip:]
    hints = typing.get_type_hints(func)
    fields: dict[str, Any] = {}
    for p in params:
        annotation = hints.get(p.name, Any)
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (annotation, Field(default, description=arg_docs.get(p.name)))
    model = create_model(f"{name}_parameters", **fields)
    parameters = model.model_json_schema()
    parameters.pop("title", None)
    for prop in parameters.get("properties", {}).values():
        prop.pop("title", None)
    parameters.setdefault("required", [])
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }
