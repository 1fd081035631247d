"""Token ids back to text pieces, when the run's model is a local checkpoint with a tokenizer.

Runs of ``hf:PATH`` agents store token ids; if PATH still holds ``tokenizer.json`` the viewer
shows each token's text, otherwise the ids alone (no download, no model load).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any


def token_pieces(agent: str, ids: list[int]) -> list[str] | None:
    """The text of each token id, or None when the run's tokenizer is not at hand."""
    tok = (
        _tokenizer(agent.split("?", 1)[0].removeprefix("hf:")) if agent.startswith("hf:") else None
    )
    if tok is None:
        return None
    return [tok.decode([i], skip_special_tokens=False) for i in ids]


@lru_cache(maxsize=8)
def _tokenizer(path: str) -> Any:
    file = Path(path) / "tokenizer.json"
    if not file.is_file():
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return None
    return Tokenizer.from_file(str(file))
