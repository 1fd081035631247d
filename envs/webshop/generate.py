"""Deterministic generator of the ``webshop`` task suites over the bundled catalog.

    python -m agentgym.envs.webshop.generate [--data ../shared/data] [--out tasks/webshop]

Goals follow WebShop's goal builders (``web_agent_site/engine/goal.py``):

- **WebShop goals** for the 415 WebShop records that carry an instruction, as
  ``get_synthetic_goals`` builds them: one goal per full combination of the product's option
  values (none for a product without options), worded ``<instruction> with <name>: <value>, and
  ...``, with the record's ``instruction_attributes`` and one price limit per product;
- **tau2 goals** for the 50 tau2 listings: every non-empty choice of option values, worded
  ``Find me <query> with <name>: <value>, and ...`` (subsets too, as human goals name a subset).

Both get WebShop's price limit (:func:`~agentgym.envs.webshop.goals.price_limit`). Goals that
WebShop's text mode cannot satisfy are left out: two wanted values that one radio button
stands for (a value offered by two options of a product, e.g. ``black`` frame and ``black`` lens:
WebShop keeps one clickable per value), and repeated instruction texts (the first is kept).
Test: :data:`TEST_SIZE` WebShop goals after a seeded shuffle (WebShop's test split is its first 500
goals after ``random.shuffle``), taken in rounds over products (each of the 415 records' first goal,
then second goals) so that the categories keep the records' mix instead of fashion's many size x
colour combinations taking over; train: the other WebShop goals and every tau2 goal.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import random
import shutil
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from agentgym.envs.webshop.build import REPO_ROOT, WEBSHOP_FILE
from agentgym.envs.webshop.catalog import DATA, Catalog, Product, bundled_catalog
from agentgym.envs.webshop.goals import (
    gold_dict,
    price_limit,
    synthetic_instruction,
    synthetic_instruction_text,
)
from agentgym.envs.webshop.pages import Pages
from agentgym.task import Task, write_manifest, write_tasks

SEED = 233
"""WebShop shuffles its goals with ``random.seed(233)``."""
TEST_SIZE = 500
"""WebShop's test split: its first 500 goals."""
ENV_ID = "agentgym/WebShop-v0"
COMPARABILITY = (
    "Scores on these suites are not comparable to WebShop's published numbers: those are measured "
    "on WebShop's own catalog (items_shuffle_1000.json, real Amazon listings), which is not "
    "available offline. This catalog keeps WebShop's 1,000 real ASINs, categories, queries, "
    "attributes and instructions but derives options, prices and page text by documented rules. "
    "Run on WebShop's own files (agentgym.envs.webshop.original.load_original) to compare."
)


def webshop_goals(data: Path, catalog: Catalog, rng: random.Random) -> Iterator[dict[str, Any]]:
    """``get_synthetic_goals`` over the WebShop records with an instruction: a goal per full
    combination of option values, one price limit per product."""
    records = json.loads((data / WEBSHOP_FILE).read_text(encoding="utf-8"))
    pages = Pages(catalog)
    for asin, record in records.items():
        if "instruction" not in record or not record["instruction_attributes"]:
            continue
        product = catalog[asin]
        upper, price_text = price_limit(product.price, rng)
        names = sorted(product.options)
        for values in itertools.product(*(product.options[n] for n in names)):
            choice = dict(zip(names, values, strict=True))
            if not clickable(pages, asin, choice):
                continue
            yield {
                "instruction": synthetic_instruction_text(
                    record["instruction"], choice, price_text
                ),
                "gold": gold_dict(asin, list(record["instruction_attributes"]), choice, upper),
                "tags": ["webshop", product.category],
            }


def option_choices(product: Product) -> Iterator[dict[str, str]]:
    """Every non-empty choice of one value for some of the options (names sorted, as WebShop)."""
    names = sorted(product.options)
    for r in range(1, len(names) + 1):
        for subset in itertools.combinations(names, r):
            for values in itertools.product(*(product.options[n] for n in subset)):
                yield dict(zip(subset, values, strict=True))


def clickable(pages: Pages, asin: str, choice: dict[str, str]) -> bool:
    """Whether WebShop's text mode can select ``choice`` (no two wanted values share a button)."""
    buttons = [pages.option_of(asin, v) for v in choice.values()]
    return len(set(buttons)) == len(buttons)


def synthetic_goals(catalog: Catalog, rng: random.Random) -> Iterator[dict[str, Any]]:
    """Goals over the option values of every tau2 listing."""
    pages = Pages(catalog)
    for product in (p for p in catalog if p.source == "tau2"):
        for choice in option_choices(product):
            if not clickable(pages, product.asin, choice):
                continue
            upper, price_text = price_limit(product.price, rng)
            yield {
                "instruction": synthetic_instruction(product.query, choice, price_text),
                "gold": gold_dict(product.asin, [], choice, upper),
                "tags": ["tau2", product.category],
            }


def to_tasks(goals: Sequence[dict[str, Any]], split: str) -> list[Task]:
    """Number the goals of a split into tasks."""
    return [
        Task(
            id=f"webshop-{split}-{i:04d}",
            env=ENV_ID,
            split=split,
            instruction=g["instruction"],
            gold=g["gold"],
            tags=g["tags"],
            difficulty=len(g["gold"]["attributes"]) + len(g["gold"]["goal_options"]),
        )
        for i, g in enumerate(goals)
    ]


def _unique(goals: Iterator[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first goal of each instruction text (a few WebShop records share one instruction)."""
    return list({g["instruction"]: g for g in reversed(list(goals))}.values())[::-1]


def spread_test(goals: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``n`` goals in rounds over products (in first-seen order): each product's first goal, then
    each one's second, ... so a product with many option combinations does not take over."""
    by_asin: dict[str, list[dict[str, Any]]] = {}
    for goal in goals:
        by_asin.setdefault(goal["gold"]["asin"], []).append(goal)
    rounds = itertools.zip_longest(*by_asin.values())
    return [g for r in rounds for g in r if g is not None][:n]


def split_goals(data: Path, catalog: Catalog, seed: int) -> dict[str, list[Task]]:
    """Shuffle the WebShop goals; :data:`TEST_SIZE` of them spread over products for test; the
    rest and the tau2 goals for train."""
    rng = random.Random(seed)
    webshop = _unique(webshop_goals(data, catalog, rng))
    tau2 = _unique(synthetic_goals(catalog, rng))
    rng.shuffle(webshop)
    test = spread_test(webshop, TEST_SIZE)
    chosen = {id(g) for g in test}
    train = [g for g in webshop if id(g) not in chosen] + tau2
    rng.shuffle(test)
    rng.shuffle(train)
    return {"train": to_tasks(train, "train"), "test": to_tasks(test, "test")}


def generate(data: Path, out: Path, seed: int = SEED) -> dict[str, Any]:
    """Write the suites, licences and manifest; return the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    catalog = bundled_catalog()
    suites = split_goals(data, catalog, seed)
    for split, tasks in suites.items():
        write_tasks(out / f"{split}.jsonl", tasks)
    for licence in ("LICENSE-webshop", "LICENSE-tau2"):
        shutil.copyfile(DATA / licence, out / licence)
    files = [f"{s}.jsonl" for s in suites] + ["LICENSE-webshop", "LICENSE-tau2"]
    manifest = {
        "generator": "agentgym.envs.webshop.generate",
        "env": ENV_ID,
        "seed": seed,
        "catalog": {
            "file": "envs/webshop/data/catalog.json",
            "sha256": _sha(DATA / "catalog.json"),
        },
        "counts": {
            s: {
                "tasks": len(ts),
                "tags": dict(sorted(Counter(t for x in ts for t in x.tags).items())),
            }
            for s, ts in suites.items()
        },
        "sha256": {f: _sha(out / f) for f in files},
        "goals": {
            "test": f"{TEST_SIZE} WebShop goals after a seeded shuffle, taken in rounds over "
            "products: every instruction record's first goal, then second goals",
            "train": "the other WebShop goals and every tau2 goal",
            "webshop": "get_synthetic_goals: record instruction + every full option combination",
            "tau2": "every non-empty choice of option values of a tau2 listing",
        },
        "comparability": COMPARABILITY,
        "sources": {
            WEBSHOP_FILE: "princeton-nlp/WebShop (MIT): ASINs, categories, queries, attributes, "
            "instructions",
            "tau2/retail/db.json": "sierra-research/tau2-bench (MIT): products, options, prices",
            "listings": "options, prices, titles, descriptions, features and reviews of the "
            "WebShop records derived by agentgym.envs.webshop.listing (see the catalog's meta)",
        },
    }
    return write_manifest(out, manifest)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "tasks" / "webshop")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    print(json.dumps(generate(args.data, args.out, args.seed)["counts"], indent=2))


if __name__ == "__main__":
    main()
