"""Text spaces for agentgym envs.

Gymnasium's ``Text`` defaults to a 62-character alphabet and ``min_length=1``: ordinary prose (spaces,
brackets, accents) fails ``contains`` and ``check_env``. Our envs speak arbitrary Unicode, so
:class:`UnicodeText` accepts any ``str`` within the length bounds and samples from printable ASCII.
"""

from __future__ import annotations

import string
from typing import Any

from gymnasium.spaces import Text

PRINTABLE = string.printable


class UnicodeText(Text):
    """A ``Text`` space that contains any Unicode string of ``min_length..max_length`` characters."""

    def __init__(self, max_length: int = 65536, min_length: int = 0, seed: Any = None) -> None:
        super().__init__(max_length=max_length, min_length=min_length, charset=PRINTABLE, seed=seed)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Sample short strings (at most 64 characters) so random agents stay fast."""
        if mask is None and probability is None:
            length = int(self.np_random.integers(self.min_length, min(self.max_length, 64) + 1))
            return super().sample(mask=(length, None))
        return super().sample(mask=mask, probability=probability)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, UnicodeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )
