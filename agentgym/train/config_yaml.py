"""YAML for training configs, bounded: a config is a few dozen values, so one that expands to
millions is refused before it is built.

YAML aliases (``*a``) repeat what an anchor (``&a``) names without copying it, so nine levels of
nine aliases load in a millisecond as shared lists, yet stand for 9**9 values: validating such a
value, or describing it in an error, expands it (gigabytes). :func:`load` measures the document
as it would be once expanded, from the parsed node graph (shared nodes counted once per use, in
time linear in the file), and refuses it past :data:`MAX_VALUES` values, :data:`MAX_CHARS`
characters, :data:`MAX_DEPTH` levels, or an alias inside the node it names.

>>> load("lr: 0.1")
{'lr': 0.1}
>>> load("a: &a [*a]")
Traceback (most recent call last):
...
agentgym.train.config_yaml.ConfigTooLarge: the alias *a sits inside the value it names (a loop)
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_VALUES = 100_000
"""Values (mappings, lists, scalars) of a config once its aliases are expanded."""
MAX_CHARS = 10_000_000
"""Characters of a config's scalars once its aliases are expanded."""
MAX_DEPTH = 100
"""Nesting of mappings and lists (PyYAML's composer recurses: a deeper one overflows)."""
MAX_BYTES = 10_000_000
"""A config file's size, checked before it is read."""


class ConfigTooLarge(ValueError):
    """A YAML config past one of the bounds; the message says which."""


def load(text: str) -> Any:
    """``yaml.safe_load`` of ``text``, refusing a document past the bounds above
    (:class:`ConfigTooLarge`) before any of it is built."""
    return yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 (a SafeLoader)


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, measuring the composed document before constructing it."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._open: list[str | None] = []  # the anchors of the nodes being composed

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self._open:
                raise ConfigTooLarge(
                    f"the alias *{event.anchor} sits inside the value it names (a loop)"
                )
            return super().compose_node(parent, index)
        if len(self._open) >= MAX_DEPTH:
            raise ConfigTooLarge(f"nested deeper than {MAX_DEPTH} levels")
        self._open.append(event.anchor)
        try:
            return super().compose_node(parent, index)
        finally:
            self._open.pop()

    def construct_document(self, node: Any) -> Any:
        values, chars = _expanded(node, {})
        if values > MAX_VALUES:
            raise ConfigTooLarge(
                f"{values:,} values once its aliases (*name) are expanded; a config holds at "
                f"most {MAX_VALUES:,}"
            )
        if chars > MAX_CHARS:
            raise ConfigTooLarge(
                f"{chars:,} characters once its aliases (*name) are expanded; a config holds at "
                f"most {MAX_CHARS:,}"
            )
        return super().construct_document(node)


def _expanded(node: Any, sizes: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """(values, scalar characters) of ``node`` with every alias expanded; each distinct node is
    measured once (``sizes``). The composer refused loops, so the recursion ends."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    if isinstance(node, yaml.ScalarNode):
        size = (1, len(node.value))
    else:
        children: list[Any] = (
            [n for pair in node.value for n in pair]
            if isinstance(node, yaml.MappingNode)
            else list(node.value)
        )
        parts = [_expanded(child, sizes) for child in children]
        size = (1 + sum(v for v, _ in parts), sum(c for _, c in parts))
    sizes[key] = size
    return size
