"""BFCL's AST checker for Python function calls (simple, multiple, parallel categories).

Follows ``bfcl_eval``'s ``ast_checker``: the function name must match; every required parameter
must be present and no unknown one; each value must have the declared type (an ``int`` passes for
a ``float`` in Python) and be among the possible answers, strings compared after BFCL's
standardisation (lower case; spaces and ``,./-_*^`` removed; ``'`` read as ``"``); an omitted
optional parameter is fine only if ``""`` is among its possible answers. Parallel calls match the
possible answers in any order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

Call = dict[str, dict[str, Any]]
"""``{function name: {parameter: value}}`` (BFCL's decoded call format)."""

PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
}


@dataclass(frozen=True)
class Verdict:
    """Whether the calls pass, and why not."""

    valid: bool
    error: str = ""


def standardize_string(text: str) -> str:
    """BFCL's ``standardize_string``."""
    return re.sub(r"[ \,\.\/\-\_\*\^]", "", text).lower().replace("'", '"')


def _type_ok(value: Any, spec: dict[str, Any]) -> bool:
    name = spec.get("type", "any")
    if name == "any" or name not in PYTHON_TYPES:
        return True
    expected = PYTHON_TYPES[name]
    if expected is float and type(value) is int:
        return True
    if type(value) is not expected:
        return False
    items = spec.get("items")
    if isinstance(value, list) and isinstance(items, dict):
        return all(_type_ok(v, items) for v in value)
    return True


def _normalise(value: Any) -> Any:
    if isinstance(value, str):
        return standardize_string(value)
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items()}
    return value


def _dict_ok(value: dict[str, Any], possible: dict[str, Any]) -> bool:
    """BFCL's ``dict_checker``: each key's value among its possible values, or omitted if allowed."""
    if set(value) - set(possible):
        return False
    return all(
        (key in value and _value_ok(value[key], values)) or (key not in value and "" in values)
        for key, values in possible.items()
    )


def _value_ok(value: Any, possible: list[Any]) -> bool:
    if isinstance(value, dict) and any(isinstance(p, dict) for p in possible):
        return any(_dict_ok(value, p) for p in possible if isinstance(p, dict))
    return _normalise(value) in [_normalise(p) for p in possible]


def check_call(function: dict[str, Any], call: Call, answer: Call) -> Verdict:
    """BFCL's ``simple_function_checker`` for one call against one possible answer."""
    name = next(iter(answer))
    made = next(iter(call))
    if made != name and made != name.replace(".", "_"):
        return Verdict(False, f"Function name {made!r} not found; expected {name!r}.")
    params, possible = call[made], answer[name]
    spec = function.get("parameters", {})
    properties: dict[str, Any] = spec.get("properties", {})
    for required in spec.get("required", []):
        if required not in params:
            return Verdict(False, f"Missing required parameter: {required!r}.")
    for param, value in params.items():
        if param not in properties or param not in possible:
            return Verdict(False, f"Unexpected parameter: {param!r}.")
        if not _type_ok(value, properties[param]):
            return Verdict(False, f"Incorrect type for parameter {param!r}: {value!r}.")
        if not _value_ok(value, possible[param]):
            return Verdict(
                False,
                f"Invalid value for parameter {param!r}: {value!r}; expected one of {possible[param]}.",
            )
    for param, values in possible.items():
        if param not in params and "" not in values:
            return Verdict(
                False, f"Optional parameter {param!r} not provided and not marked as optional."
            )
    return Verdict(True)


def _function(functions: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    return next(
        (f for f in functions if f["name"] in (name, name.replace("_", "."))), None
    ) or next((f for f in functions if f["name"].replace(".", "_") == name), None)


def check(functions: list[dict[str, Any]], calls: list[Call], answers: list[Call]) -> Verdict:
    """Calls against the possible answers: one each (simple, multiple) or any order (parallel)."""
    if len(calls) != len(answers):
        return Verdict(
            False, f"Wrong number of function calls: {len(calls)}, expected {len(answers)}."
        )
    unmatched = list(range(len(calls)))
    for answer in answers:
        function = _function(functions, next(iter(answer)))
        if function is None:
            return Verdict(False, f"No function description for {next(iter(answer))!r}.")
        errors = []
        for i in unmatched:
            verdict = check_call(function, calls[i], answer)
            if verdict.valid:
                unmatched.remove(i)
                break
            errors.append(verdict.error)
        else:
            return Verdict(False, f"No call matches {next(iter(answer))!r}: " + " | ".join(errors))
    return Verdict(True)
