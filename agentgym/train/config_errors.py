"""A config's pydantic ``ValidationError`` as one line: where each problem is (the dotted field
path), what is wrong, and for an unknown key the keys there are. The CLI prints bad input as one
``error:`` line, and pydantic's own text takes four lines a problem.

>>> from pydantic import BaseModel, ConfigDict, ValidationError
>>> class Opts(BaseModel):
...     model_config = ConfigDict(extra="forbid")
...     beta: float = 1.0
...     tau: float = 0.5
>>> try:
...     Opts.model_validate({"betta": 2, "tau": "x"})
... except ValidationError as e:
...     print(one_line(e, Opts))
tau: input should be a valid number, unable to parse string as a number (got 'x'); betta: \
unknown key, did you mean beta? (allowed: beta, tau)
"""

from __future__ import annotations

import difflib
import reprlib
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from agentgym.llm.sampling import renamed_key


def one_line(
    e: ValidationError, model: type[BaseModel], source: Callable[[str, str], str] | None = None
) -> str:
    """Every problem of ``e`` (raised by ``model``) as ``path: message``, joined by ``; ``.

    ``source(path, message)``, when given, names where the bad value came from (a file, an
    override) and goes before each problem.
    """
    parts = []
    for err in e.errors():
        where, what = describe(err, model)
        said = f"{where}: {what}" if where and not _names(what, where) else what
        parts.append((source(where, what) if source else "", said))
    labels = {label for label, _ in parts}
    if len(labels) == 1:  # one source: named once
        return ": ".join([*labels - {""}, "; ".join(said for _, said in parts)])
    return "; ".join(f"{label}: {said}" for label, said in parts)


def describe(err: Any, model: type[BaseModel]) -> tuple[str, str]:
    """One pydantic error as (dotted path, message in a clause)."""
    loc = [str(p) for p in err["loc"]]
    where, kind, msg = ".".join(loc), err["type"], str(err["msg"])
    if kind == "extra_forbidden":
        return where, _unknown_key(loc, fields_at(model, loc[:-1]))
    if kind == "value_error":  # a validator's own message: already a clause that says what to do
        return where, msg.removeprefix("Value error, ")
    msg = msg[:1].lower() + msg[1:]
    if kind == "missing":
        return where, "required, and not set"
    got = bounded_repr(err.get("input"))
    return where, f"{msg} (got {got if len(got) <= 60 else got[:57] + '...'})"


_SHORT = reprlib.Repr()  # keyword arguments only from Python 3.12
_SHORT.maxlevel = 2
for _name in ("maxtuple", "maxlist", "maxarray", "maxdict", "maxset", "maxfrozenset", "maxdeque"):
    setattr(_SHORT, _name, 4)
_SHORT.maxstring = _SHORT.maxlong = _SHORT.maxother = 60


def bounded_repr(value: Any) -> str:
    """``repr(value)`` cut short while it is built: the first few items of a container, a few
    levels deep, so that describing an input costs the same however large it is (a YAML alias
    bomb's repr is gigabytes).

    >>> bounded_repr([list(range(10**6))] * 10**6)
    '[[0, 1, 2, 3, ...], [0, 1, 2, 3, ...], [0, 1, 2, 3, ...], [0, 1, 2, 3, ...], ...]'
    """
    return _SHORT.repr(value)


def fields_at(model: type[BaseModel], loc: Sequence[str]) -> list[str] | None:
    """The keys the section at ``loc`` takes (None: not a typed section, e.g. a free dict)."""
    found: type[BaseModel] | None = model
    for part in loc:
        if found is None or part not in found.model_fields:
            return None
        found = _model_of(found.model_fields[part].annotation)
    return None if found is None else list(found.model_fields)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation names, through ``X | None``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        models = [m for a in typing.get_args(annotation) if (m := _model_of(a)) is not None]
        return models[0] if len(models) == 1 else None
    return None


def _unknown_key(loc: list[str], allowed: list[str] | None) -> str:
    if allowed is None:
        return "unknown key"
    if new := renamed_key(loc[-1], allowed):
        return f"renamed to {'.'.join([*loc[:-1], new])}"
    close = difflib.get_close_matches(loc[-1], allowed, n=1, cutoff=0.6)
    hint = f", did you mean {'.'.join([*loc[:-1], close[0]])}?" if close else ""
    return f"unknown key{hint} (allowed: {', '.join(allowed)})"


def _names(message: str, where: str) -> bool:
    """Whether a validator's message already starts with the field it is about."""
    return message.startswith(where) and message[len(where) : len(where) + 1] in (".", ":", " ")
