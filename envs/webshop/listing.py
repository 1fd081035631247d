"""What WebShop's product file has and ``items_ins_v2_1000.json`` lacks, derived by fixed rules.

WebShop's catalog (``items_shuffle_1000.json``, scraped from Amazon) cannot be had offline. For each
of the 1,000 WebShop records agentgym knows the ASIN, category, search query and attributes; this
module adds the rest of a listing, deterministically from a seed and the ASIN:

- **price** (:func:`pricing`): drawn from a per-category log-normal, :data:`PRICE_MODELS` (median
  and log-space sigma). The medians and spreads are agentgym's choice, set so that the nine real
  WebShop prices in the human trajectories (``human_trajectories/*.jsonl``: $4.89 to $339) fall
  inside their category's 2nd-98th percentile. A share of listings (:data:`RANGE_SHARE`) show a
  price range ``$low to $high`` as Amazon listings with variants do; the price paid is then drawn
  uniformly within it, as WebShop's ``generate_product_prices`` does.
- **options** (:func:`options`): option names and values by category and query (sizes for shoes
  and clothes, flavours for food, bed sizes for mattresses, colours ...), drawn from value pools
  taken from the tau2-bench retail variants (colours, materials, capacities, storage) and from
  the option values WebShop's human instructions ask for (``human_goals.json``: shoe sizes,
  clothing sizes, fluid ounces, pack counts, flavours, scents, hair colours). Values are written
  as WebShop normalises them (lower case, ``/`` as `` | ``).
- **title, description, features, reviews and rating** (:func:`listing_text`): a brand (built from
  syllables, no real brand is named), the product noun from the query, some attributes and a
  size or pack detail, as Amazon titles read; a description paragraph and one feature bullet per
  attribute (every attribute appears in the features and the description, as WebShop's attribute
  reward reads them); 0-5 reviews with a J-shaped score distribution and the rating as their
  mean (``N.A.`` without reviews, as WebShop shows it).

Everything here is synthetic text around real WebShop records: scores on this catalog are not
comparable to WebShop's published numbers (those need WebShop's own catalog, see
:mod:`agentgym.envs.webshop.original`).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from agentgym.envs.webshop.catalog import Review


# ---------------------------------------------------------------------------- prices
@dataclass(frozen=True)
class PriceModel:
    """Log-normal price: ``exp(N(ln(median), sigma))``, clipped to [low, high]."""

    median: float
    sigma: float
    low: float = 1.99
    high: float = 2500.0

    def quantile(self, p: float) -> float:
        """The ``p`` quantile (before clipping)."""
        return self.median * math.exp(self.sigma * NormalDist().inv_cdf(p))


PRICE_MODELS = {
    "beauty": PriceModel(18.0, 0.75),
    "grocery": PriceModel(15.0, 0.65),
    "electronics": PriceModel(40.0, 1.3),
    "fashion": PriceModel(25.0, 0.6),
    "garden": PriceModel(120.0, 0.9),
}
"""Per WebShop category (beauty = Beauty & Personal Care, garden = Home & Kitchen ...)."""
RANGE_SHARE = {"with_options": 0.35, "without_options": 0.05}
"""Share of listings priced as a range, by whether the listing has options."""
RANGE_SPREAD = (1.1, 2.0)
"""A range's high price is its low price times a factor drawn uniformly from this interval."""


def _shop_price(value: float, rng: random.Random) -> float:
    """A price as shops write it: mostly ``.99``, some ``.95``, ``.00`` or any cents."""
    dollars = max(1, int(value))
    ending = rng.random()
    if ending < 0.6:
        return dollars + 0.99 if dollars > 1 else 1.99
    if ending < 0.75:
        return dollars + 0.95
    if ending < 0.85:
        return float(dollars)
    return round(value, 2)


def pricing(category: str, has_options: bool, rng: random.Random) -> tuple[float, ...]:
    """WebShop's ``pricing``: one price, or a low and a high price."""
    model = PRICE_MODELS[category]
    raw = min(model.high, max(model.low, rng.lognormvariate(math.log(model.median), model.sigma)))
    low = _shop_price(raw, rng)
    share = RANGE_SHARE["with_options" if has_options else "without_options"]
    if rng.random() >= share:
        return (low,)
    high = _shop_price(low * rng.uniform(*RANGE_SPREAD), rng)
    return (low, max(high, round(low + 1.0, 2)))


def price_paid(prices: Sequence[float], rng: random.Random) -> float:
    """WebShop's ``generate_product_prices``: the one price, or uniform within the range."""
    return prices[0] if len(prices) == 1 else rng.uniform(prices[0], prices[1])


# ---------------------------------------------------------------------------- option values
COLORS = (
    "black", "white", "grey", "navy", "blue", "red", "green", "pink", "beige", "brown",
    "silver", "gold", "rose gold", "purple", "yellow", "khaki", "burgundy", "teal", "olive",
    "ivory", "light blue", "dark grey", "wine red", "army green", "royal blue", "coffee",
)  # fmt: skip
"""tau2 variant colours (first 14) and colours WebShop's human instructions ask for."""
FURNITURE_COLORS = ("black", "white", "grey", "espresso", "walnut", "natural", "brown", "oak", "beige", "navy")  # fmt: skip
HAIR_COLORS = ("natural black", "dark brown", "light brown", "medium brown", "blonde", "ash blonde", "platinum blonde", "auburn", "silver grey", "ombre brown")  # fmt: skip
SHADES = ("nude", "coral", "berry", "rose", "red", "pink", "plum", "mauve", "brown", "peach", "wine", "natural")  # fmt: skip
CLOTHING_SIZES = ("x-small", "small", "medium", "large", "x-large", "xx-large", "3x-large")
WOMENS_SHOE_SIZES = ("5", "5.5", "6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "11")
MENS_SHOE_SIZES = ("7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "11.5", "12", "13")
BED_SIZES = ("twin", "twin xl", "full", "queen", "king", "california king")
FLUID_OUNCES = ("1 fl oz", "1.7 fl oz", "2 fl oz", "3.4 fl oz", "4 fl oz", "8 fl oz", "12 fl oz", "16 fl oz")  # fmt: skip
PACKS = ("pack of 1", "pack of 2", "pack of 3", "pack of 4", "pack of 6", "pack of 12", "pack of 24")  # fmt: skip
OUNCES = ("1.5 ounce", "3.5 ounce", "4 ounce", "8 ounce", "12 ounce", "16 ounce", "32 ounce")
FLAVORS = (
    "original", "peanut butter", "mixed berry", "french vanilla", "white cheddar",
    "passion fruit", "green tea", "chocolate chip", "dark chocolate", "cinnamon", "sea salt",
    "honey mustard", "chili lime", "strawberry", "mango", "barbecue", "sour cream & onion",
    "butter pecan", "coconut", "birthday cake",
)  # fmt: skip
"""Flavours WebShop's human instructions ask for, most often first."""
SCENTS = ("lavender", "coconut", "vanilla", "unscented", "tea tree", "cherry blossom", "sweet pea", "mountain air", "cedarwood", "eucalyptus mint", "citrus", "fresh linen")  # fmt: skip
HAIR_LENGTHS = ("12 inch", "14 inch", "16 inch", "18 inch", "20 inch", "22 inch", "24 inch")
CABLE_LENGTHS = ("3 ft", "6 ft", "10 ft", "15 ft", "25 ft", "50 ft")
PILLOW_SIZES = ("16 x 16 inch", "18 x 18 inch", "20 x 20 inch", "22 x 22 inch", "12 x 20 inch", "24 x 24 inch")  # fmt: skip
PANEL_SIZES = ("42 x 63 inch", "42 x 84 inch", "52 x 63 inch", "52 x 84 inch", "52 x 95 inch")
ART_SIZES = ("12 x 16 inch", "16 x 20 inch", "16 x 24 inch", "24 x 36 inch", "30 x 40 inch")
CAPACITIES = ("5000mah", "10000mah", "20000mah", "26800mah")
STORAGE = ("32gb", "64gb", "128gb", "256gb", "512gb")
MATERIALS = ("wood", "metal", "glass", "fabric", "leather", "velvet", "linen", "rattan")
OPTION_SHARE = {"fashion": 0.9, "garden": 0.7, "grocery": 0.65, "beauty": 0.6, "electronics": 0.55}
"""Share of listings with options, by category."""

_SHOES = ("shoe", "sandal", "pump", "boot", "loafer", "slipper", "mule", "clog", "sneaker", "oxford", "flat", "footwear")  # fmt: skip


def _has(query: str, *words: str) -> bool:
    return any(w in query for w in words)


def _run(values: Sequence[str], rng: random.Random, low: int, high: int) -> tuple[str, ...]:
    """A contiguous run of ``low``..``high`` values (sizes come in runs)."""
    n = min(len(values), rng.randint(low, high))
    start = rng.randint(0, len(values) - n)
    return tuple(values[start : start + n])


def _some(values: Sequence[str], rng: random.Random, low: int, high: int) -> tuple[str, ...]:
    """``low``..``high`` values in pool order (a listing's swatches)."""
    n = min(len(values), rng.randint(low, high))
    keep = set(rng.sample(range(len(values)), n))
    return tuple(v for i, v in enumerate(values) if i in keep)


def option_scheme(category: str, query: str, rng: random.Random) -> dict[str, tuple[str, ...]]:
    """Option name -> values for a listing of ``category`` found under ``query``."""
    q = query.lower()
    if category == "fashion":
        if _has(q, *_SHOES):
            sizes = WOMENS_SHOE_SIZES if "women" in q else MENS_SHOE_SIZES
            return {"size": _run(sizes, rng, 4, 8), "color": _some(COLORS, rng, 2, 6)}
        if _has(q, "socks", "hosiery"):
            return {"size": _run(CLOTHING_SIZES[1:4], rng, 2, 3), "color": _some(COLORS, rng, 2, 5)}
        return {"size": _run(CLOTHING_SIZES, rng, 3, 6), "color": _some(COLORS, rng, 2, 8)}
    if category == "beauty":
        if _has(q, "fragrance", "perfume"):
            return {"size": _run(FLUID_OUNCES[:5], rng, 2, 3)}
        if _has(q, "hair extension", "wig"):
            return {"color": _some(HAIR_COLORS, rng, 3, 6), "size": _run(HAIR_LENGTHS, rng, 2, 4)}
        if _has(q, "makeup", "lip", "eye", "nail", "hair coloring"):
            return {"color": _some(SHADES, rng, 3, 7)}
        if _has(q, "body", "deodorant", "scrub", "bath", "shave", "soap"):
            return {"scent": _some(SCENTS, rng, 2, 5), "size": _run(FLUID_OUNCES, rng, 1, 3)}
        return {"size": _run(PACKS[:5], rng, 2, 4)}
    if category == "grocery":
        scheme = {"flavor name": _some(FLAVORS, rng, 2, 6)}
        if rng.random() < 0.6:
            scheme["size"] = (
                _run(PACKS, rng, 2, 4) if rng.random() < 0.5 else _run(OUNCES, rng, 2, 3)
            )
        return scheme
    if category == "electronics":
        colors = _some(COLORS[:14], rng, 2, 4)
        if _has(q, "cable"):
            return {"size": _run(CABLE_LENGTHS, rng, 3, 5), "color": colors}
        if _has(q, "charger", "power"):
            return {"capacity": _run(CAPACITIES, rng, 2, 3), "color": colors}
        if _has(q, "camera", "media player", "mac"):
            return {"storage": _run(STORAGE, rng, 2, 3), "color": colors}
        return {"color": colors}
    if category == "garden":
        colors = _some(FURNITURE_COLORS, rng, 2, 5)
        if _has(q, "mattress", "bed"):
            return {"size": _run(BED_SIZES, rng, 3, 5), "color": colors}
        if _has(q, "pillow", "blanket"):
            return {"size": _run(PILLOW_SIZES, rng, 2, 4), "color": _some(COLORS, rng, 3, 6)}
        if _has(q, "window"):
            return {"size": _run(PANEL_SIZES, rng, 2, 4), "color": _some(COLORS, rng, 3, 6)}
        if _has(q, "wall art", "mirror"):
            return {"size": _run(ART_SIZES, rng, 2, 4)}
        if _has(q, "candle"):
            return {"scent": _some(SCENTS, rng, 2, 5)}
        if rng.random() < 0.3:
            return {"color": colors, "material": _some(MATERIALS, rng, 2, 3)}
        return {"color": colors}
    return {}


def options(category: str, query: str, rng: random.Random) -> dict[str, tuple[str, ...]]:
    """The listing's options: none for a share of listings (:data:`OPTION_SHARE`), else a scheme."""
    if rng.random() >= OPTION_SHARE.get(category, 0.0):
        return {}
    return option_scheme(category, query, rng)


# ---------------------------------------------------------------------------- text
_ONSETS = ("b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "cr", "gl", "kr", "pl", "st", "tr", "vel", "mor", "zen")  # fmt: skip
_NUCLEI = ("a", "e", "i", "o", "u", "ai", "ee", "oo", "y")
_CODAS = ("", "n", "r", "x", "s", "l", "k", "ra", "na", "ia", "ex", "on", "ly")


def brand(rng: random.Random) -> str:
    """A made-up brand: one or two syllables and an ending, sometimes in capitals as many listings have."""
    name = "".join(rng.choice(_ONSETS) + rng.choice(_NUCLEI) for _ in range(rng.randint(0, 1)))
    name += rng.choice(_ONSETS) + rng.choice(_NUCLEI) + rng.choice(_CODAS)
    return name.upper() if rng.random() < 0.25 else name.capitalize()


def _cap(text: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in text.split())


def product_noun(query: str, rng: random.Random) -> str:
    """One product noun out of a query (``hair extensions, wigs & accessories`` -> ``wigs``)."""
    parts = [p.strip() for p in re.split(r",| & | and ", query) if p.strip()]
    if len(parts) > 1 and parts[-1] in ("accessories", "supplies", "tools", "kits"):
        parts = parts[:-1]
    return rng.choice(parts) if parts else query


_DETAILS = {
    "beauty": ("{n} Count", "{n} Pack", "{oz} Fl Oz", "Travel Size", "Salon Quality"),
    "grocery": ("{oz} Ounce (Pack of {n})", "{n} Count", "Family Size", "Gift Box", "{oz} Oz Bag"),
    "electronics": ("{ver} Version", "Upgraded {year}", "with Remote", "Plug and Play", "{n} Pack"),
    "fashion": ("Casual", "Classic Fit", "Slim Fit", "Regular Fit", "Lightweight"),
    "garden": ("for Living Room", "for Bedroom", "for Home Office", "Modern", "Farmhouse Style"),
}


def _detail(category: str, rng: random.Random) -> str:
    template = rng.choice(_DETAILS.get(category, ("",)))
    return template.format(
        n=rng.choice((2, 3, 4, 6, 12, 24)),
        oz=rng.choice((1.7, 3.4, 4, 8, 12, 16)),
        ver=rng.choice(("2.0", "3.0", "Pro", "Plus")),
        year=rng.choice((2020, 2021, 2022)),
    )


def title(
    maker: str, noun: str, category: str, attributes: Sequence[str], rng: random.Random
) -> str:
    """An Amazon-style title: brand, the product noun, one or two attributes, a detail."""
    picked = [
        _cap(a) for a in rng.sample(list(attributes), min(len(attributes), rng.randint(1, 2)))
    ]
    detail, name = _detail(category, rng), _cap(noun)
    if not picked:
        return f"{maker} {name} - {detail}"
    if category == "fashion" or rng.random() < 0.4:
        with_ = f" with {picked[1]}" if len(picked) > 1 else ""
        if detail.startswith(("for ", "with ")):
            return f"{maker} {picked[0]} {name}{with_} {detail}"
        return f"{maker} {detail} {picked[0]} {name}{with_}"
    joint = " " if detail.startswith(("for ", "with ")) else " - "
    return f"{maker} {name}, {', '.join(picked)}{joint}{detail}"


_FEATURE = (
    "{A}: designed with {a} in mind for everyday use at home, at work or on the go.",
    "{A} - made for {a}; every unit is checked by our quality team before it ships.",
    "【{A}】 {a} that lasts: a practical choice for home, work or travel.",
    "{A}: the reason customers choose this {noun}. Easy to use and easy to clean.",
)
_DESCRIPTION = (
    "{brand} {noun}: {attrs}, in one {category_word} essential. {extra}",
    "Looking for {noun}? Meet {brand}: {attrs}. {extra}",
    "{brand} makes {noun} for everyday use, with {attrs}. {extra}",
)
_EXTRA = {
    "beauty": "Suitable for all skin types; patch test before first use.",
    "grocery": "Store in a cool, dry place. Check the label for allergens.",
    "electronics": "Backed by a 12-month warranty and friendly customer support.",
    "fashion": "Please check the size chart before ordering; machine wash cold.",
    "garden": "Assembly instructions and all hardware included.",
    "retail": "",
}
_CATEGORY_WORD = {
    "beauty": "beauty",
    "grocery": "pantry",
    "electronics": "electronics",
    "fashion": "wardrobe",
    "garden": "home",
}
_GENERIC = ("well made", "good quality", "easy to use")
"""What a listing without attributes says of itself."""
_REVIEW_SCORES = (5, 5, 5, 5, 5, 5, 4, 4, 4, 3, 2, 1, 1)
"""A J-shaped distribution of review scores, as on Amazon (mostly 5, then 4, few low)."""
_REVIEW_TITLES = {
    5: ("Love it!", "Exactly what I needed", "Great {noun}", "Five stars", "Highly recommend"),
    4: ("Pretty good", "Good value", "Works well", "Nice {noun}"),
    3: ("It's okay", "Average", "Does the job"),
    2: ("Not great", "Expected more"),
    1: ("Disappointed", "Would not buy again", "Broke quickly"),
}
_REVIEW_BODIES = {
    5: "{A} as described. Arrived on time and I would buy it again.",
    4: "Good value, {a} as promised. Only wish there were more options.",
    3: "Fine for the price. {A} is okay but not as good as I hoped.",
    2: "The {a} part did not hold up, and it looks cheaper than in the photos.",
    1: "Stopped working after a week. Not {a} at all in my experience.",
}


def listing_text(
    maker: str,
    noun: str,
    category: str,
    attributes: Sequence[str],
    rng: random.Random,
) -> tuple[str, tuple[str, ...], tuple[Review, ...], str]:
    """Description, feature bullets, reviews and rating of a listing."""
    attrs = list(attributes) or list(_GENERIC)
    attr_text = ", ".join(attrs[:-1]) + (" and " if len(attrs) > 1 else "") + attrs[-1]
    description = (
        rng.choice(_DESCRIPTION)
        .format(
            brand=maker,
            noun=noun,
            attrs=attr_text,
            category_word=_CATEGORY_WORD.get(category, ""),
            extra=_EXTRA.get(category, ""),
        )
        .strip()
    )
    bullets = tuple(
        rng.choice(_FEATURE).format(A=a.upper(), a=a, noun=noun) for a in attributes
    ) or (f"{_cap(noun)} by {maker}.",)
    reviews = []
    for _ in range(rng.choice((0, 0, 1, 2, 3, 3, 4, 5))):
        score = rng.choice(_REVIEW_SCORES)
        a = rng.choice(attrs)
        reviews.append(
            Review(
                title=rng.choice(_REVIEW_TITLES[score]).format(noun=noun),
                score=score,
                body=_REVIEW_BODIES[score].format(noun=noun, a=a, A=a[:1].upper() + a[1:]),
            )
        )
    rating = f"{sum(r.score for r in reviews) / len(reviews):.1f}" if reviews else "N.A."
    return description, bullets, tuple(reviews), rating
