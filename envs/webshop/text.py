"""WebShop's text-matching helpers: ``normalize_color`` and thefuzz's ``token_set_ratio``.

WebShop's reward compares attributes and options with ``thefuzz.fuzz.token_set_ratio`` (> 85 is a
match) after mapping colours with ``normalize_color`` (``web_agent_site/engine/normalize.py``).
Both are reimplemented here so the reward needs no fuzzy-matching package: the ratio follows
thefuzz >= 0.20 (which delegates to rapidfuzz): ASCII-only, lower-cased, non-alphanumerics turned
into spaces, token sets compared with the normalised Indel similarity, rounded to an integer.
"""

from __future__ import annotations

import re
from functools import lru_cache

COLOR_SET: tuple[str, ...] = (
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black",
    "blue", "blush", "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel",
    "champagne", "charcoal", "cheetah", "chestnut", "chocolate", "christmas", "coffee", "cognac",
    "copper", "coral", "cranberry", "cream", "crystal", "dark", "denim", "eggplant", "elephant",
    "espresso", "fuchsia", "gold", "granite", "grape", "graphite", "grass", "gray", "green",
    "grey", "heather", "indigo", "ivory", "ivy", "khaki", "lavender", "lemon", "leopard", "light",
    "lilac", "lime", "magenta", "maroon", "mauve", "merlot", "midnight", "mint", "mocha",
    "multicolor", "mushroom", "mustard", "natural", "navy", "nude", "olive", "orange", "peach",
    "pewter", "pink", "plum", "purple", "rainbow", "red", "rose", "royal", "rust", "sand",
    "sapphire", "seashell", "silver", "skull", "slate", "steel", "stone", "stonewash",
    "sunflower", "tan", "taupe", "teal", "tiger", "turquoise", "violet", "walnut", "wheat",
    "white", "wine", "yellow",
)  # fmt: skip
"""WebShop's colour vocabulary, in its order: the first one contained in a value wins."""

_NON_ALNUM = re.compile(r"[^0-9a-zA-Z]+")


def normalize_color(value: str) -> str:
    """The first colour of :data:`COLOR_SET` that occurs in ``value`` (substring), else ``value``."""
    for color in COLOR_SET:
        if color in value:
            return color
    return value


def full_process(text: str) -> str:
    """thefuzz's default processing: drop non-ASCII, lower-case, non-alphanumerics to spaces."""
    ascii_only = text.encode("ascii", "ignore").decode("ascii")
    return _NON_ALNUM.sub(" ", ascii_only).lower().strip()


def indel_distance(a: str, b: str) -> int:
    """Insertions + deletions turning ``a`` into ``b`` (= len(a) + len(b) - 2 * LCS)."""
    if not a or not b:
        return len(a) + len(b)
    previous = [0] * (len(b) + 1)
    for ca in a:
        current = [0]
        for j, cb in enumerate(b):
            current.append(previous[j] + 1 if ca == cb else max(previous[j + 1], current[j]))
        previous = current
    return len(a) + len(b) - 2 * previous[-1]


def _similarity(distance: int, total: int) -> float:
    return 100.0 if total == 0 else 100.0 - 100.0 * distance / total


@lru_cache(maxsize=1 << 16)
def token_set_ratio(s1: str, s2: str) -> int:
    """``thefuzz.fuzz.token_set_ratio(s1, s2)``: 0-100, 100 when one token set contains the other."""
    tokens_a, tokens_b = set(full_process(s1).split()), set(full_process(s2).split())
    if not tokens_a or not tokens_b:
        return 0
    common = tokens_a & tokens_b
    only_a, only_b = tokens_a - tokens_b, tokens_b - tokens_a
    if common and (not only_a or not only_b):
        return 100
    diff_a, diff_b = " ".join(sorted(only_a)), " ".join(sorted(only_b))
    common_len = len(" ".join(sorted(common)))
    sep = 1 if common_len else 0
    with_a, with_b = common_len + sep + len(diff_a), common_len + sep + len(diff_b)
    best = _similarity(indel_distance(diff_a, diff_b), with_a + with_b)
    if common_len:
        best = max(
            best,
            _similarity(sep + len(diff_a), common_len + with_a),
            _similarity(sep + len(diff_b), common_len + with_b),
        )
    return int(round(best))
