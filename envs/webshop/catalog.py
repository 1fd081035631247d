"""Products in WebShop's schema and the catalog that holds them.

A :class:`Product` carries the fields WebShop's engine builds in ``load_products`` (``Title``,
``Price``, ``options``, ``Attributes``, ``BulletPoints``, ``Description``, ``Reviews``,
``Rating``) under snake_case names, plus ``title_nouns``: the spaCy noun tokens of the title that
the type reward compares (computed once when the catalog is built, so the reward needs no tagger).

The bundled catalog is ``data/catalog.json`` (written by :mod:`agentgym.envs.webshop.build`); the
original WebShop files load through :mod:`agentgym.envs.webshop.original`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
BUNDLED = DATA / "catalog.json"
DEFAULT_PRICE = 100.0
"""WebShop's price for a product without pricing (``load_products``: ``pricing = [100.0]``)."""


@dataclass(frozen=True)
class Review:
    """One customer review as WebShop shows it."""

    title: str
    score: int
    body: str


@dataclass(frozen=True)
class Product:
    """One product in WebShop's schema."""

    asin: str
    name: str
    """``Title`` in WebShop."""
    category: str
    """Top-level WebShop category: beauty, electronics, fashion, garden, grocery (or retail)."""
    query: str
    """The search query the product was scraped under (lower case); part of the type reward."""
    product_category: str
    """Amazon breadcrumb, levels separated by ``›``."""
    pricing: tuple[float, ...]
    """One price, or a low and a high price (WebShop's ``pricing``)."""
    price: float
    """The price paid (WebShop draws it uniformly within ``pricing`` once per product)."""
    options: dict[str, tuple[str, ...]]
    """Option name -> values, lower case, ``/`` written `` | `` (WebShop's ``options``)."""
    attributes: tuple[str, ...]
    bullet_points: tuple[str, ...] = ()
    description: str = ""
    reviews: tuple[Review, ...] = ()
    rating: str = "N.A."
    title_nouns: tuple[str, ...] = ()
    source: str = ""
    """Where the record comes from (``webshop``, ``tau2``, ``original``)."""
    text_lower: tuple[str, str, str] = field(init=False, repr=False, compare=False)
    """Title, joined features and description in lower case (the reward's substring checks)."""

    def __post_init__(self) -> None:
        lowered = (
            self.name.lower(),
            " ".join(self.bullet_points).lower(),
            self.description.lower(),
        )
        object.__setattr__(self, "text_lower", lowered)

    @property
    def price_tag(self) -> str:
        """WebShop's ``Price`` string: ``$10.99`` or ``$10.99 to $12.5``."""
        if len(self.pricing) == 1:
            return f"${self.pricing[0]}"
        return f"${self.pricing[0]} to ${self.pricing[1]}"

    def search_text(self) -> str:
        """What WebShop indexes: title, description, first feature, option text (lower case)."""
        option_text = ", and ".join(f"{n}: {', '.join(vs)}" for n, vs in self.options.items())
        first_feature = self.bullet_points[0] if self.bullet_points else ""
        return " ".join([self.name, self.description, first_feature, option_text]).lower()

    def to_json(self) -> dict[str, Any]:
        """The catalog file's record (inverse of :meth:`from_json`)."""
        return {
            "asin": self.asin,
            "name": self.name,
            "category": self.category,
            "query": self.query,
            "product_category": self.product_category,
            "pricing": list(self.pricing),
            "price": self.price,
            "options": {k: list(v) for k, v in self.options.items()},
            "attributes": list(self.attributes),
            "bullet_points": list(self.bullet_points),
            "description": self.description,
            "reviews": [r.__dict__ for r in self.reviews],
            "rating": self.rating,
            "title_nouns": list(self.title_nouns),
            "source": self.source,
        }

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> Product:
        """Build a product from a catalog record."""
        return cls(
            asin=row["asin"],
            name=row["name"],
            category=row["category"],
            query=row["query"],
            product_category=row["product_category"],
            pricing=tuple(float(p) for p in row["pricing"]),
            price=float(row["price"]),
            options={k: tuple(v) for k, v in row["options"].items()},
            attributes=tuple(row["attributes"]),
            bullet_points=tuple(row.get("bullet_points", ())),
            description=row.get("description", ""),
            reviews=tuple(Review(**r) for r in row.get("reviews", ())),
            rating=str(row.get("rating", "N.A.")),
            title_nouns=tuple(row.get("title_nouns", ())),
            source=row.get("source", ""),
        )


class Catalog:
    """Products by ASIN, in a fixed order (the search index is built in this order)."""

    def __init__(self, products: Iterable[Product], name: str = "custom") -> None:
        self.name = name
        self.products = list(products)
        self.by_asin = {p.asin: p for p in self.products}
        if len(self.by_asin) != len(self.products):
            raise ValueError(f"catalog {name!r} has duplicate ASINs")

    def __len__(self) -> int:
        return len(self.products)

    def __iter__(self) -> Iterator[Product]:
        return iter(self.products)

    def __contains__(self, asin: object) -> bool:
        return asin in self.by_asin

    def __getitem__(self, asin: str) -> Product:
        try:
            return self.by_asin[asin]
        except KeyError:
            raise KeyError(f"no product {asin!r} in catalog {self.name!r}") from None

    @classmethod
    def from_file(cls, path: Path) -> Catalog:
        """Read a catalog file (``{"products": [...]}``)."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls((Product.from_json(r) for r in data["products"]), name=str(path))

    def write(self, path: Path, meta: dict[str, Any] | None = None) -> None:
        """Write the catalog as one JSON file, one product per line for readable diffs."""
        rows = ",\n".join(json.dumps(p.to_json(), ensure_ascii=False) for p in self.products)
        head = json.dumps(meta or {}, ensure_ascii=False)
        Path(path).write_text(f'{{"meta": {head},\n"products": [\n{rows}\n]}}\n', "utf-8")


@cache
def bundled_catalog() -> Catalog:
    """The catalog shipped with agentgym (loaded once per process, shared by every env)."""
    catalog = Catalog.from_file(BUNDLED)
    catalog.name = "bundled"
    return catalog
