"""BM25 product search, top 50, as WebShop's Pyserini/Lucene index does it.

WebShop indexes each product's title, description, first feature and option text (lower case) with
Lucene's English analyzer (Porter stemming, Lucene's 33 stop words) and ranks with BM25 at
Pyserini's defaults ``k1 = 0.9``, ``b = 0.4``, returning the top 50.

The engine is **bm25s** (``method="lucene"``, same k1 and b) with the original Porter stemmer of
PyStemmer, chosen over SQLite FTS5 by measurement (``benchmarks/webshop.py``, same run, same
documents and queries): FTS5 fixes BM25 at ``k1 = 1.2, b = 0.75`` and, with a WebShop instruction
as an OR of ~10 terms, answered 7-11x fewer searches per second than bm25s (about 240-830 vs
2,700-10,000 on one core of the shared machine, depending on load). Ties keep catalog order, so
results are deterministic; repeated queries hit an LRU cache.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import bm25s
import numpy as np
import Stemmer

from agentgym.envs.webshop.catalog import Catalog

SEARCH_RETURN_N = 50
"""Results per search (WebShop's ``SEARCH_RETURN_N``)."""
K1, B = 0.9, 0.4
"""Pyserini's BM25 defaults, which WebShop's ``LuceneSearcher`` uses."""
LUCENE_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)
"""Lucene's ``EnglishAnalyzer`` stop set."""
_WORD = re.compile(r"\w+")


class SearchEngine:
    """BM25 over a catalog's search text; ``search(query)`` -> up to 50 ASINs, best first."""

    def __init__(self, catalog: Catalog, cache_size: int = 4096) -> None:
        self.asins = [p.asin for p in catalog]
        self._stemmer = Stemmer.Stemmer("porter")
        self._bm25 = bm25s.BM25(method="lucene", k1=K1, b=B)
        corpus = [self.analyze(p.search_text()) for p in catalog]
        self._bm25.index(corpus, show_progress=False)
        self._vocab = set(self._bm25.vocab_dict)
        self.search = lru_cache(maxsize=cache_size)(self._search)

    def analyze(self, text: str) -> list[str]:
        """Lucene-style analysis: lower case, word tokens, stop words out, Porter stems."""
        words = [w for w in _WORD.findall(text.lower()) if w not in LUCENE_STOP_WORDS]
        return list(self._stemmer.stemWords(words))

    def _search(self, query: str) -> tuple[str, ...]:
        terms = [t for t in self.analyze(query) if t in self._vocab]
        if not terms:
            return ()
        scores = self._bm25.get_scores(terms)
        order = np.argsort(-scores, kind="stable")[:SEARCH_RETURN_N]
        order = order[scores[order] > 0]
        return tuple(self.asins[i] for i in order.tolist())

    def search_keywords(self, keywords: Sequence[str]) -> tuple[str, ...]:
        """WebShop joins its keyword list with spaces before searching."""
        return self.search(" ".join(keywords))
