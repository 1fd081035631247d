"""Build the bundled catalog (``data/catalog.json``) from real data, deterministically.

    python -m agentgym.envs.webshop.build [--data ../shared/data]

WebShop's product file (``items_shuffle*.json``) is not available offline, so the catalog joins
two real sources and derives, by fixed rules, only what they lack:

- **1,000 WebShop records** (``webshop/items_ins_v2_1000.json``, MIT): real ASINs and attribute
  lists, and for 415 of them WebShop's instruction, whose text holds the product's search query
  ("Find me <attributes> <query> with/for <attributes>"). The file is ordered by WebShop category
  (beauty, grocery, electronics, fashion, garden), so the category comes from the record's
  position (:data:`CATEGORY_STARTS`, the first instruction of each category). Records without an
  instruction take the query of the instruction record of their category whose attributes overlap
  most (then the nearest in the file). Breadcrumb = WebShop's top category › the query. The rest
  of the listing (options, price, title, description, features, reviews, rating) is derived per
  record from a seed and its ASIN by :mod:`agentgym.envs.webshop.listing`, whose rules the catalog's
  ``meta.listing_rules`` records.
- **50 tau2-bench retail products** (``tau2/retail/db.json``, MIT) with their 591 real variants:
  real names, option values (the union over variants, WebShop-normalised) and price range; the
  price paid is drawn uniformly within the range once per product, as WebShop does.

Title nouns come from spaCy (see :mod:`agentgym.envs.webshop.nouns`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentgym.envs.webshop import listing
from agentgym.envs.webshop.catalog import BUNDLED, DATA, Catalog, Product
from agentgym.envs.webshop.nouns import Tagger, model_version, spacy_tagger

SEED = 20220701
CATEGORY_STARTS = ((0, "beauty"), (239, "grocery"), (358, "electronics"), (586, "fashion"), (785, "garden"))  # fmt: skip
"""Index of the first record of each WebShop category in ``items_ins_v2_1000.json``."""
TOP_CATEGORY = {
    "beauty": "Beauty & Personal Care",
    "grocery": "Grocery & Gourmet Food",
    "electronics": "Electronics",
    "fashion": "Clothing, Shoes & Jewelry",
    "garden": "Home & Kitchen",
}
WEBSHOP_FILE = "webshop/items_ins_v2_1000.json"
TAU2_FILE = "tau2/retail/db.json"
REPO_ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------- WebShop records
def category_of(index: int) -> str:
    """WebShop category of the record at ``index`` of the file."""
    return [name for start, name in CATEGORY_STARTS if start <= index][-1]


def parse_query(instruction: str, attributes: Sequence[str]) -> str:
    """The search query inside "Find me <attrs> <query>[ with <attrs>][ for <attrs>]"."""
    text = instruction.removeprefix("Find me ").strip()
    head, *tails = re.split(r" (?:with|for) ", text)
    after = {a.strip() for tail in tails for a in tail.split(", ")}
    before = [a for a in attributes if a not in after]
    prefix = ", ".join(before) + " "
    if before and head.startswith(prefix):
        return head[len(prefix) :].strip()
    changed = True
    while changed:  # attributes in another order: peel them off one at a time
        changed = False
        for attribute in before:
            for sep in (", ", " "):
                if head.startswith(attribute + sep):
                    head, changed = head[len(attribute) + len(sep) :], True
    return head.strip()


def _title(text: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in text.split())


def webshop_records(data: Path) -> list[dict[str, Any]]:
    """Each record with asin, index, category, attributes and (where it has one) query."""
    raw = json.loads((data / WEBSHOP_FILE).read_text(encoding="utf-8"))
    rows = []
    for index, (asin, record) in enumerate(raw.items()):
        row = {"asin": asin, "index": index, "category": category_of(index), **record}
        if "instruction" in record:
            row["query"] = parse_query(record["instruction"], record["instruction_attributes"])
        rows.append(row)
    for row in rows:
        row.setdefault("query", _borrow_query(row, rows))
    return rows


def _borrow_query(row: dict[str, Any], rows: Sequence[dict[str, Any]]) -> str:
    """Query of the same-category instruction record sharing most attributes, then nearest."""
    mine = set(row["attributes"])
    donors = [r for r in rows if "instruction" in r and r["category"] == row["category"]]

    def key(donor: dict[str, Any]) -> tuple[float, int]:
        theirs = set(donor["attributes"])
        overlap = len(mine & theirs) / len(mine | theirs) if mine | theirs else 0.0
        return (-overlap, abs(donor["index"] - row["index"]))

    return str(min(donors, key=key)["query"])


def webshop_product(row: dict[str, Any], seed: int = SEED) -> Product:
    """A product from a WebShop record: its real ASIN, category, query and attributes, and a
    listing derived by :mod:`agentgym.envs.webshop.listing` (options, price, title, page text)."""
    rng = random.Random(f"{seed}:{row['asin']}")
    attributes = tuple(row["attributes"])
    category, query = row["category"], row["query"]
    options = listing.options(category, query, rng)
    prices = listing.pricing(category, bool(options), rng)
    price = listing.price_paid(prices, rng)
    maker, noun = listing.brand(rng), listing.product_noun(query, rng)
    name = listing.title(maker, noun, category, attributes, rng)
    description, bullets, reviews, rating = listing.listing_text(
        maker, noun, category, attributes, rng
    )
    return Product(
        asin=row["asin"],
        name=name,
        category=category,
        query=query,
        product_category=f"{TOP_CATEGORY[category]} › {_title(query)}",
        pricing=prices,
        price=price,
        options=options,
        attributes=attributes,
        bullet_points=bullets,
        description=description,
        reviews=reviews,
        rating=rating,
        source="webshop",
    )


# ---------------------------------------------------------------------------- tau2 products
def option_value(value: str) -> str:
    """WebShop's option normalisation (``load_products``): strip, ``/`` -> `` | ``, lower."""
    return value.strip().replace("/", " | ").lower()


def tau2_product(product: dict[str, Any], seed: int) -> Product:
    """One listing per tau2 product: its variants' options and price range."""
    options: dict[str, list[str]] = {}
    for variant in product["variants"].values():
        for name, value in variant["options"].items():
            values = options.setdefault(name.lower(), [])
            if option_value(value) not in values:
                values.append(option_value(value))
    prices = [v["price"] for v in product["variants"].values()]
    low, high = min(prices), max(prices)
    asin = product["product_id"]
    bullets = tuple(f"{_title(n)}: {', '.join(vs)}" for n, vs in options.items())
    rng = random.Random(f"{seed}:{asin}:page")
    *_, reviews, rating = listing.listing_text("", product["name"].lower(), "retail", (), rng)
    return Product(
        asin=asin,
        name=product["name"],
        category="retail",
        query=product["name"].lower(),
        product_category=f"Retail › {product['name']}",
        pricing=(low, high),
        price=random.Random(f"{seed}:{asin}").uniform(low, high),
        options={k: tuple(v) for k, v in options.items()},
        attributes=(),
        bullet_points=bullets,
        description=f"{product['name']} in {len(product['variants'])} variants.",
        reviews=reviews,
        rating=rating,
        source="tau2",
    )


def tau2_products(data: Path, seed: int) -> list[Product]:
    """Every tau2 retail product, in file order."""
    db = json.loads((data / TAU2_FILE).read_text(encoding="utf-8"))
    return [tau2_product(p, seed) for p in db["products"].values()]


# ---------------------------------------------------------------------------- catalog
def build_catalog(data: Path, tagger: Tagger, seed: int = SEED) -> Catalog:
    """The bundled catalog: WebShop records then tau2 listings, with title nouns."""
    products = [webshop_product(r, seed) for r in webshop_records(data)]
    products += tau2_products(data, seed)
    nouns = tagger(p.name for p in products)
    rows = [{**p.to_json(), "title_nouns": list(n)} for p, n in zip(products, nouns, strict=True)]
    return Catalog((Product.from_json(r) for r in rows), name="bundled")


def write_bundle(
    data: Path, out: Path = BUNDLED, seed: int = SEED, model: str | None = None
) -> dict[str, Any]:
    """Write the catalog, its licences and provenance; return the provenance."""
    tagger = spacy_tagger(model)
    catalog = build_catalog(data, tagger, seed)
    sources = {
        WEBSHOP_FILE: "princeton-nlp/WebShop (MIT)",
        TAU2_FILE: "sierra-research/tau2-bench (MIT)",
    }
    meta = {
        "generator": "agentgym.envs.webshop.build",
        "seed": seed,
        "tagger": model_version(tagger.model),  # type: ignore[attr-defined]
        "products": len(catalog),
        "by_source": {s: sum(p.source == s for p in catalog) for s in ("webshop", "tau2")},
        "listing_rules": {
            "module": "agentgym.envs.webshop.listing",
            "price_models": {
                c: {
                    "distribution": "lognormal",
                    "median": m.median,
                    "sigma": m.sigma,
                    "clip": [m.low, m.high],
                }
                for c, m in listing.PRICE_MODELS.items()
            },  # fmt: skip
            "price_range_share": listing.RANGE_SHARE,
            "price_range_spread": list(listing.RANGE_SPREAD),
            "option_share": listing.OPTION_SHARE,
        },
        "sources": {f: {"by": by, "sha256": _sha256(data / f)} for f, by in sources.items()},
    }
    catalog.write(out, meta)
    shutil.copyfile(data / "webshop" / "LICENSE.md", out.parent / "LICENSE-webshop")
    shutil.copyfile(data / "tau2" / "LICENSE", out.parent / "LICENSE-tau2")
    return meta


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=DATA / "catalog.json")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--model", default=None, help="spaCy pipeline (default: first installed)")
    args = parser.parse_args(argv)
    print(json.dumps(write_bundle(args.data, args.out, args.seed, args.model), indent=2))


if __name__ == "__main__":
    main()
