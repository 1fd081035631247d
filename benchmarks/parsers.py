"""Parsers of model and user text on adversarial input: seconds at 64 KB and 1 MB.

Each row is one parser fed the input that made the regex it replaced quadratic or worse. A linear
parser takes about 16 times longer on 1 MB than on 64 KB; the bound (``--bound``, 2 s by default) is
generous on purpose, for a loaded machine. The old regexes are timed as the baseline on 4 KB and
8 KB (twice the input: 4 times the time when quadratic, 8 times when cubic; the cubic tool-use one
on 400 and 800 characters, as it needs minutes for 3 KB).

    python benchmarks/parsers.py [--bound 2.0] [--no-baseline]
"""

from __future__ import annotations

import argparse
import contextlib
import re
import time
from collections.abc import Callable
from typing import Any

import agentgym
from agentgym.chat_agent import parse_action
from agentgym.envs.kbqa import actions as kbqa
from agentgym.envs.social import llm_judge, llm_partner
from agentgym.envs.tooluse import actions as tooluse
from agentgym.llm.clients import parse_tool_calls


def _quiet(parse: Callable[[str], Any]) -> Callable[[str], None]:
    def run(text: str) -> None:
        with contextlib.suppress(ValueError):  # FormatError and friends: the answer, not a failure
            parse(text)

    return run


def _env_step(env_id: str) -> Callable[[str], None]:
    env = agentgym.make(env_id)

    def run(text: str) -> None:
        env.reset(seed=0)
        env.step(text)

    return run


def _reply(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


_OLD_ACTION_LINE = re.compile(r"^\s*action\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
Case = tuple  # (name, make input of n chars, parser, old regex or None[, baseline size])
CASES: list[Case] = [
    (
        "KBQA parse, repeated <action>",
        lambda n: "<action>" * (n // 8),
        _quiet(kbqa.parse),
        lambda t: re.findall(r"<action>(.*?)</action>", t, re.DOTALL | re.IGNORECASE),
    ),
    (
        "KBQA-v0 step, repeated <think>",
        lambda n: "<think>" * (n // 7),
        _env_step("agentgym/KBQA-v0"),
        None,
    ),
    (
        "chat agent, run of newlines",
        lambda n: "go" + "\n" * n + "look",
        _quiet(lambda t: parse_action(_reply(t))),
        _OLD_ACTION_LINE.findall,
    ),
    (
        "chat agent, fence + letters",
        lambda n: "x\n```" + "a" * n,
        _quiet(lambda t: parse_action(_reply(t))),
        re.compile(r"```[a-zA-Z]*\n?(.*?)```", re.DOTALL).findall,
    ),
    (
        "tool-use unwrap, <tool_call> + spaces",
        lambda n: "<tool_call>" + " " * n + "x",
        tooluse.unwrap,
        re.compile(r"^<tool_call>\s*(.*?)\s*</tool_call>$", re.DOTALL).match,
        400,
    ),
    (
        "BFCL-v0 step, <tool_call> + spaces",
        lambda n: "<tool_call>" + " " * n + "\nx",
        _env_step("agentgym/BFCL-v0"),
        None,
    ),
    (
        "generated tool calls, unclosed",
        lambda n: "<tool_call>{" * (n // 12),
        parse_tool_calls,
        re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL).findall,
    ),
    (
        "social partner reply, one brace",
        lambda n: "{" + '"action_type"' * (n // 13),
        llm_partner.extract_action,
        re.compile(r"\{[^{}]*\"action_type\"[^{}]*\}", re.DOTALL).findall,
    ),
    (
        "social judge reply, repeated fences",
        lambda n: "```{" * (n // 4),
        _quiet(llm_judge._json_object),
        re.compile(r"```(?:json)?\s*(\{.*\})\s*```", re.DOTALL).search,
    ),
]


def seconds(parse: Callable[[str], Any], text: str) -> float:
    t0 = time.perf_counter()
    parse(text)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bound", type=float, default=2.0, help="seconds allowed for 1 MB")
    ap.add_argument("--no-baseline", action="store_true", help="skip timing the old regexes")
    args = ap.parse_args()
    print(
        f"{'parser':40s} {'64 KB':>8s} {'1 MB':>8s} {'x':>6s}  {'old n':>6s} {'old s':>8s} {'old 2n s':>8s} {'x':>6s}"
    )
    over = []
    for name, make, parse, old, *rest in CASES:
        n = rest[0] if rest else 4_000
        small, big = seconds(parse, make(64_000)), seconds(parse, make(1_000_000))
        line = f"{name:40s} {small:8.3f} {big:8.3f} {big / max(small, 1e-6):6.1f}"
        if old is not None and not args.no_baseline:
            a, b = seconds(old, make(n)), seconds(old, make(2 * n))
            line += f"  {n:6d} {a:8.3f} {b:8.3f} {b / max(a, 1e-6):6.1f}"
        print(line, flush=True)
        if big > args.bound:
            over.append(name)
    print(f"over the {args.bound:g} s bound at 1 MB: {', '.join(over) or 'none'}")
    raise SystemExit(1 if over else 0)


if __name__ == "__main__":
    main()
