"""WebShop's pages in its ``text`` observation mode, and the clickables of each page.

WebShop renders HTML and its text env keeps the visible strings joined by `` [SEP] ``. These are
the same strings in the same order (the ReAct/AgentGym version of the templates): search page,
results (10 per page, ``Page N (Total results: T)``, ``< Prev``/``Next >``), item page (options,
title, price, rating, ``Description``, ``Features``, ``Reviews``, ``Buy Now``), the three
sub-pages and the done page. Clickables are WebShop's ``text_to_clickable`` keys: button texts and
product links in lower case, option values as they are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache

from agentgym.envs.webshop.catalog import Catalog, Product

SEP = " [SEP] "
PRODUCT_WINDOW = 10
"""Results per page (WebShop's ``PRODUCT_WINDOW``)."""
BACK_TO_SEARCH, NEXT_PAGE, PREV_PAGE, BUY_NOW = "Back to Search", "Next >", "< Prev", "Buy Now"
SUB_PAGES = ("Description", "Features", "Reviews")
ITEM_BUTTONS = tuple(b.lower() for b in (*SUB_PAGES, BUY_NOW))


class Pages:
    """Renders pages of one catalog; per-product strings are built once and cached."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._item = lru_cache(maxsize=None)(self._item_body)
        self._result = lru_cache(maxsize=None)(self._result_entry)
        self._clicks = lru_cache(maxsize=None)(self._item_clickables)

    # ---------------------------------------------------------------- pages
    @staticmethod
    def search(instruction: str) -> str:
        """The start page: logo, instruction, search bar."""
        return f"WebShop{SEP}Instruction:{SEP}{instruction}{SEP}Search"

    def results(self, instruction: str, asins: Sequence[str], page: int) -> str:
        """A page of search results."""
        parts = [f"Instruction:{SEP}{instruction}", BACK_TO_SEARCH]
        parts.append(f"Page {page} (Total results: {len(asins)})")
        if page > 1:
            parts.append(PREV_PAGE)
        if page * PRODUCT_WINDOW < len(asins):
            parts.append(NEXT_PAGE)
        parts += [self._result(a) for a in page_slice(asins, page)]
        return SEP.join(parts)

    def item(self, instruction: str, asin: str) -> str:
        """A product page (WebShop's text mode does not show which options are chosen)."""
        return f"Instruction:{SEP}{instruction}{SEP}{BACK_TO_SEARCH}{SEP}{PREV_PAGE}{SEP}{self._item(asin)}"

    def sub_page(self, instruction: str, asin: str, name: str) -> str:
        """``Description``, ``Features`` or ``Reviews`` of a product."""
        product = self.catalog[asin]
        head = f"Instruction:{SEP}{instruction}{SEP}{BACK_TO_SEARCH}{SEP}{PREV_PAGE}"
        if name == "Description":
            body = [product.description] if product.description else []
        elif name == "Features":
            body = list(product.bullet_points) or ["No Features"]
        else:
            body = [f'"{r.title}"{SEP}{r.score}{SEP}{r.body}' for r in product.reviews]
            body = body or ["No reviews found"]
        return SEP.join([head, *body])

    @staticmethod
    def done(asin: str, options: Mapping[str, str], reward: float) -> str:
        """The page after ``Buy Now``: what was bought and the score."""
        return SEP.join(
            [
                "Thank you for shopping with us!",
                "Your code:",
                "(Paste it in your MTurk interface.)",
                "Purchased",
                f"asin{SEP}{asin}",
                f"options{SEP}{json.dumps(dict(options))}",
                f"Your score (min 0.0, max 1.0){SEP}{reward}",
            ]
        )

    # ---------------------------------------------------------------- clickables
    @staticmethod
    def result_clickables(asins: Sequence[str], page: int) -> list[str]:
        """Buttons and product links of a results page (lower case, WebShop's keys)."""
        keys = [BACK_TO_SEARCH.lower()]
        if page > 1:
            keys.append(PREV_PAGE.lower())
        if page * PRODUCT_WINDOW < len(asins):
            keys.append(NEXT_PAGE.lower())
        return keys + [a.lower() for a in page_slice(asins, page)]

    def item_clickables(self, asin: str) -> tuple[str, ...]:
        """Buttons and option values of a product page."""
        return self._clicks(asin)

    def option_of(self, asin: str, value: str) -> str | None:
        """The option name a click on ``value`` sets: the last option offering it, as in WebShop
        (its clickables map holds one radio button per value, later ones overwrite)."""
        found = None
        for name, values in self.catalog[asin].options.items():
            if value in values:
                found = name
        return found

    # ---------------------------------------------------------------- cached pieces
    def _item_body(self, asin: str) -> str:
        product = self.catalog[asin]
        parts = [f"{name}{SEP}{SEP.join(values)}" for name, values in product.options.items()]
        parts += [product.name, f"Price: {product.price_tag}", f"Rating: {product.rating}"]
        parts += [*SUB_PAGES, BUY_NOW]
        return SEP.join(parts)

    def _result_entry(self, asin: str) -> str:
        product: Product = self.catalog[asin]
        return f"{asin}{SEP}{product.name}{SEP}{product.price_tag}"

    def _item_clickables(self, asin: str) -> tuple[str, ...]:
        values = dict.fromkeys(v for vs in self.catalog[asin].options.values() for v in vs)
        return (BACK_TO_SEARCH.lower(), PREV_PAGE.lower(), *values, *ITEM_BUTTONS)


def page_slice(asins: Sequence[str], page: int) -> Sequence[str]:
    """The results shown on ``page`` (1-based)."""
    return asins[(page - 1) * PRODUCT_WINDOW : page * PRODUCT_WINDOW]
