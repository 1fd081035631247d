"""Toolkits: typed tool functions over a :class:`Database`, called the way the benchmarks call them.

A tool raises (or, in tau-bench v1, returns) an error; the agent sees ``Error: <message>``, exactly
as tau-bench's ``Env.step`` and tau2-bench's ``Environment.get_response`` produce it. Tools are
called with the agent's arguments as keywords, unconverted, so a wrong argument name gives the
same ``TypeError`` text the original gives (the functions carry the original qualified names).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from enum import Enum
from typing import Any, ClassVar

from pydantic import BaseModel

from agentgym.envs.tooluse.db import Database
from agentgym.envs.tooluse.schema import tool_schema


class ToolKind(str, Enum):
    """tau2-bench's tool types: reads never change the database, writes may."""

    READ = "read"
    WRITE = "write"
    GENERIC = "generic"
    THINK = "think"


def tool(kind: ToolKind) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a toolkit method as a tool the agent may call."""

    def mark(func: Callable[..., Any]) -> Callable[..., Any]:
        func._tool_kind = kind  # type: ignore[attr-defined]
        return func

    return mark


Fix = tuple[str, dict[str, Any]]
"""A tool call as (name, arguments)."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool call returned to the agent."""

    output: str
    error: bool


def to_json_str(resp: Any) -> str:
    """tau2-bench's ``Environment.to_json_str``: models dumped, scalars as text, JSON otherwise."""

    def process(value: Any) -> Any:
        if isinstance(value, BaseModel):
            return value.model_dump()
        if isinstance(value, str) or value is None:
            return value
        if isinstance(value, (int, float, bool)):
            return str(value)
        if isinstance(value, (list, tuple)):
            return type(value)(process(v) for v in value)
        if isinstance(value, dict):
            return {k: process(v) for k, v in value.items()}
        if isinstance(value, (datetime, date)):
            return value.isoformat()
        raise ValueError(f"Unsupported type: {type(value)}")

    if not isinstance(resp, str):
        return json.dumps(process(resp), default=str)
    return resp


_TOOLS: dict[type, dict[str, Callable[..., Any]]] = {}
"""Each toolkit class's tools, looked up once."""


class Toolkit:
    """Base of every domain toolkit (tau2 style: tools are methods, results are dumped)."""

    db: Database
    unknown_tool_message: ClassVar[str] = "Error: Tool '{name}' not found."
    assertion_fixes: ClassVar[dict[str, Callable[[dict[str, Any]], Fix | None]]] = {}
    """Env-assertion function -> the tool call (name, arguments) of this toolkit that makes it
    hold (None where none does). The expert uses it where a task's assertions ask for more than
    its gold actions do."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @classmethod
    def tool_functions(cls) -> dict[str, Callable[..., Any]]:
        """Every tool, by name (alphabetical), looked up once per class."""
        if cls not in _TOOLS:
            _TOOLS[cls] = {
                name: fn
                for name, fn in inspect.getmembers(cls, inspect.isfunction)
                if hasattr(fn, "_tool_kind")
            }
        return _TOOLS[cls]

    @classmethod
    def kind(cls, name: str) -> ToolKind | None:
        """The tool's kind, or None if there is no such tool."""
        fn = cls.tool_functions().get(name)
        return None if fn is None else fn._tool_kind  # type: ignore[attr-defined,no-any-return]

    @classmethod
    def schemas(cls) -> list[dict[str, Any]]:
        """OpenAI tool schemas, sorted by name."""
        return [tool_schema(n, f) for n, f in sorted(cls.tool_functions().items())]

    def invoke(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a tool and return its raw result (exceptions propagate)."""
        if name not in self.tool_functions():
            raise ValueError(f"Tool '{name}' not found.")
        return getattr(self, name)(**arguments)

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a tool as the benchmark does: errors become ``Error: ...`` text."""
        try:
            return ToolResult(to_json_str(self.invoke(name, arguments)), False)
        except Exception as e:  # the benchmark shows every tool exception to the agent
            return ToolResult(f"Error: {e}", True)

    def run_function(self, func_name: str, arguments: dict[str, Any]) -> Any:
        """Run any method (initialisation actions and assertions of tau2 tasks use non-tools)."""
        func = getattr(self, func_name, None)
        if func is None or func_name.startswith("_"):
            raise ValueError(f"Function {func_name} not found in {type(self).__name__}")
        return func(**arguments)
