"""Deterministic generator of the ``webshop`` task suites over the bundled catalog.

    python -m agentgym.envs.webshop.generate [--data ../shared/data] [--out tasks/webshop]

Goals follow WebShop's two goal builders (``web_agent_site/engine/goal.py``):

- **human-style goals** for the 415 WebShop records that carry an instruction: the real
  instruction text, its ``instruction_attributes``, no options (``get_human_goals``);
- **synthetic goals** for the 50 tau2 listings: every non-empty choice of option values, worded
  ``Find me <query> with <name>: <value>, and ...`` (``get_synthetic_goals`` uses every full
  combination; human goals name a subset of options, so subsets are included too).

Both get WebShop's price limit (:func:`~agentgym.envs.webshop.goals.price_limit`). Goals that
WebShop's text mode cannot satisfy are left out: two wanted values that one radio button
stands for (a value offered by two options of a product, e.g. ``black`` frame and ``black`` lens:
WebShop keeps one clickable per value), and repeated instruction texts (3 WebShop instructions
are shared by several records; the first is kept). Test: 250 goals of each kind; train: the rest.
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
    human_instruction,
    price_limit,
    synthetic_instruction,
)
from agentgym.envs.webshop.pages import Pages
from agentgym.task import Task, write_tasks

SEED = 233
"""WebShop shuffles its goals with ``random.seed(233)``."""
TEST_PER_KIND = 250
ENV_ID = "agentgym/WebShop-v0"


def human_goals(data: Path, catalog: Catalog, rng: random.Random) -> Iterator[dict[str, Any]]:
    """One goal per WebShop record with an instruction."""
    records = json.loads((data / WEBSHOP_FILE).read_text(encoding="utf-8"))
    for asin, record in records.items():
        if "instruction" not in record or not record["instruction_attributes"]:
            continue
        upper, price_text = price_limit(catalog[asin].price, rng)
        yield {
            "instruction": human_instruction(record["instruction"], price_text),
            "gold": gold_dict(asin, list(record["instruction_attributes"]), {}, upper),
            "tags": ["webshop", catalog[asin].category],
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


def split_goals(data: Path, catalog: Catalog, seed: int) -> dict[str, list[Task]]:
    """Shuffle each kind of goal, take :data:`TEST_PER_KIND` of each for test, the rest train."""
    rng = random.Random(seed)
    kinds = [_unique(human_goals(data, catalog, rng)), _unique(synthetic_goals(catalog, rng))]
    test: list[dict[str, Any]] = []
    train: list[dict[str, Any]] = []
    for goals in kinds:
        rng.shuffle(goals)
        test += goals[:TEST_PER_KIND]
        train += goals[TEST_PER_KIND:]
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
        "sources": {
            WEBSHOP_FILE: "princeton-nlp/WebShop (MIT): instructions, attributes",
            "tau2/retail/db.json": "sierra-research/tau2-bench (MIT): products, options, prices",
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


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
