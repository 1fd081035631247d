"""Deterministic generator of the ``clarify`` task suites from real data.

    python -m agentgym.envs.clarify.generate [--data ../shared/data] [--out tasks/clarify]

Items: the 591 product variants of tau2-bench retail (MIT) and movies of the MetaQA knowledge base
(Creative Commons). Target items are split between train and test by a stable hash, so no test
target is ever a train target. Each task's turn limit is the expert's question count + 1 (the
answer) + ``SLACK``, measured by playing the expert on the task.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import shutil
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentgym.cache import sha256_file
from agentgym.envs.clarify.env import ClarifyEnv
from agentgym.envs.clarify.items import Item
from agentgym.task import Task, suite_counts, write_manifest, write_tasks

SEED = 20240601
SLACK = 4
"""Turns beyond the expert's need: room for an imperfect but sensible questioner."""
TEST_FRACTION = 0.3
"""Share of each domain's item pool whose items may be test targets."""
LEVELS = {"easy": (6, 8), "medium": (9, 12), "hard": (13, 16)}
"""Difficulty by number of candidates."""
MOVIE_RELATIONS = {  # KB relation -> (attribute, most values kept)
    "directed_by": ("director", 2),
    "has_genre": ("genre", 3),
    "release_year": ("year", 1),
    "in_language": ("language", 2),
    "written_by": ("writer", 2),
    "starred_actors": ("actor", 3),
}
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Source:
    """Where one domain's items come from, and the licence file written beside the tasks."""

    file: str
    """Path under the shared data folder."""
    source: str
    licence: str
    licence_file: str
    """Name of the licence or notice file in the output folder."""


SOURCES = {
    "products": Source(
        file="tau2/retail/db.json",
        source="sierra-research/tau2-bench data/tau2/domains/retail/db.json (products -> variants)",
        licence="MIT",
        licence_file="LICENSE-tau2",
    ),
    "movies": Source(
        file="metaqa/kb.tsv",
        source="MetaQA knowledge base (yuyuz/MetaQA, via vaijsc/keallm data/MetaQA), named triples",
        licence="Creative Commons (as released by the MetaQA authors)",
        licence_file="LICENSE-metaqa",
    ),
}
METAQA_NOTICE = """\
The movie items in this folder's task files (train.jsonl, test.jsonl) are derived from the MetaQA
knowledge base: Yuyu Zhang, Hanjun Dai, Zornitsa Kozareva, Alexander J. Smola, Le Song,
"Variational Reasoning for Question Answering with Knowledge Graph", AAAI 2018.
https://github.com/yuyuz/MetaQA

MetaQA is released by its authors under a Creative Commons licence; these derived items are shared
under the same terms, with attribution to the authors above. MetaQA's movie KB in turn builds on the
WikiMovies data (Miller et al., 2016, "Key-Value Memory Networks for Directly Reading Documents").

What was taken: for movies with one release year, a genre and a director, the relations
directed_by, has_genre, release_year, in_language, written_by, starred_actors (lists truncated to
at most 2 directors, 3 genres, 2 languages, 2 writers, 3 actors, in the KB's order).
"""


# ---------------------------------------------------------------------------- item pools
def load_products(data: Path) -> list[Item]:
    """Every tau2 retail variant as an item: product type plus each option."""
    db = json.loads((data / SOURCES["products"].file).read_text(encoding="utf-8"))
    items = []
    for product in db["products"].values():
        for item_id, variant in sorted(product["variants"].items()):
            options = {k.lower(): str(v) for k, v in variant["options"].items()}
            shown = ", ".join(f"{k}: {v}" for k, v in options.items())
            attributes = {"product": [product["name"]], **{k: [v] for k, v in options.items()}}
            items.append(
                Item(id=item_id, name=f"{product['name']} ({shown})", attributes=attributes)
            )
    return sorted(items, key=lambda i: i.id)


def read_kb(path: Path) -> dict[str, dict[str, list[str]]]:
    """head -> relation -> tails, in file order."""
    kb: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            head, relation, tail = line.rstrip("\n").split("\t")
            kb[head][relation].append(tail)
    return kb


def load_movies(data: Path) -> list[Item]:
    """Movies with exactly one release year, a genre and a director, keyed by a title slug.

    MetaQA merges remakes that share a title into one entity (several years, mixed casts); those are
    skipped, as are titles that differ only by case, so every item is one real film.
    """
    kb = read_kb(data / SOURCES["movies"].file)
    titles = Counter(h.lower() for h, rel in kb.items() if "release_year" in rel)
    items = []
    for title, rel in kb.items():
        if titles[title.lower()] != 1 or len(set(rel.get("release_year", []))) != 1:
            continue
        if not rel.get("has_genre") or not rel.get("directed_by"):
            continue
        attributes = {
            name: list(dict.fromkeys(rel[r]))[:limit]
            for r, (name, limit) in MOVIE_RELATIONS.items()
            if rel.get(r)
        }
        year = attributes["year"][0]
        items.append(
            Item(id=f"{_slug(title)}-{year}", name=f"{title} ({year})", attributes=attributes)
        )
    counts = Counter(i.id for i in items)
    return sorted((i for i in items if counts[i.id] == 1), key=lambda i: i.id)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "untitled"


def split_of(domain: str, item: Item) -> str:
    """Stable train/test assignment of a target item (sha256 of domain and id)."""
    digest = hashlib.sha256(f"clarify:{domain}:{item.id}".encode()).digest()
    return "test" if int.from_bytes(digest[:8], "big") / 2**64 < TEST_FRACTION else "train"


# ---------------------------------------------------------------------------- candidates
def pick_candidates(
    domain: str, target: Item, pool: Sequence[Item], k: int, rng: random.Random
) -> list[Item]:
    """``k`` pairwise-distinguishable items including ``target``: about half look like it."""
    similar = [i for i in pool if i.id != target.id and _looks_alike(domain, target, i)]
    rng.shuffle(similar)
    chosen = {target.signature(): target}
    for item in [*similar[: k // 2], *_shuffled(pool, rng)]:
        if len(chosen) == k:
            break
        chosen.setdefault(item.signature(), item)
    items = list(chosen.values())
    rng.shuffle(items)
    return items


def _looks_alike(domain: str, a: Item, b: Item) -> bool:
    """Same product type, or a shared first genre: distractors that take real questions."""
    attribute = "product" if domain == "products" else "genre"
    return a.attributes[attribute][0] == b.attributes[attribute][0]


def _shuffled(items: Sequence[Item], rng: random.Random) -> Iterator[Item]:
    order = list(items)
    rng.shuffle(order)
    return iter(order)


# ---------------------------------------------------------------------------- tasks
def make_task(
    domain: str, split: str, index: int, target: Item, pool: Sequence[Item], seed: int
) -> Task:
    """One task; its turn limit comes from playing the expert on it."""
    rng = random.Random(f"{seed}:{domain}:{split}:{index}")
    level = list(LEVELS)[index % len(LEVELS)]
    candidates = pick_candidates(domain, target, pool, rng.randint(*LEVELS[level]), rng)
    task = Task(
        id=f"clarify-{domain}-{split}-{index:04d}",
        env="agentgym/Clarify-v0",
        split=split,
        instruction=(
            f"The user wants one of these {len(candidates)} {domain}. "
            "Find out which by asking yes/no questions, then answer."
        ),
        config={
            "domain": domain,
            "max_turns": len(candidates) + 1,
            "candidates": [c.model_dump() for c in candidates],
        },
        gold={"target": target.id},
        tags=[domain, level],
        difficulty=level,
    )
    questions = expert_questions(task)
    return task.model_copy(update={"config": {**task.config, "max_turns": questions + 1 + SLACK}})


def expert_questions(task: Task) -> int:
    """How many questions the expert asks before answering ``task`` correctly."""
    env = ClarifyEnv()
    env.reset(seed=0, options={"task": task})
    for turn in range(task.config["max_turns"]):
        _, _, terminated, truncated, info = env.step(env.expert_action())
        if terminated or truncated:
            if not info["success"]:
                raise RuntimeError(f"expert failed {task.id}")
            return turn
    raise RuntimeError(f"expert did not finish {task.id}")


def build_split(domain: str, split: str, items: Sequence[Item], n: int, seed: int) -> list[Task]:
    """``n`` tasks with distinct targets from ``split``; distractors come from all items."""
    targets = [i for i in items if split_of(domain, i) == split]
    random.Random(f"{seed}:{domain}:{split}:targets").shuffle(targets)
    if len(targets) < n:
        raise ValueError(f"only {len(targets)} {domain} {split} targets for {n} tasks")
    return [make_task(domain, split, k, t, items, seed) for k, t in enumerate(targets[:n])]


# ---------------------------------------------------------------------------- files
def write_licences(data: Path, out: Path) -> list[str]:
    """Copy tau2's MIT licence and write the MetaQA notice beside the task files."""
    shutil.copyfile(data / "tau2" / "LICENSE", out / SOURCES["products"].licence_file)
    (out / SOURCES["movies"].licence_file).write_text(METAQA_NOTICE, encoding="utf-8")
    return [s.licence_file for s in SOURCES.values()]


def manifest(
    suites: dict[str, list[Task]], out: Path, seed: int, licences: list[str]
) -> dict[str, Any]:
    """Provenance: generator, seed, counts per split and tag, file hashes, sources and licences."""
    files = [f"{split}.jsonl" for split in suites] + licences
    return {
        "generator": "agentgym.envs.clarify.generate",
        "env": "agentgym/Clarify-v0",
        "seed": seed,
        "parameters": {
            "slack": SLACK,
            "test_fraction": TEST_FRACTION,
            "levels": LEVELS,
            "movie_attributes": {
                r: {"attribute": a, "max_values": m} for r, (a, m) in MOVIE_RELATIONS.items()
            },
        },
        "counts": {split: suite_counts(tasks) for split, tasks in suites.items()},
        "sha256": {f: sha256_file(out / f) for f in files},
        "sources": {d: asdict(s) for d, s in SOURCES.items()},
    }


def generate(
    data: Path, out: Path, seed: int = SEED, train: int = 250, test: int = 100
) -> dict[str, Any]:
    """Write train/test suites (``train``/``test`` tasks per domain), licences and the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    pools = {"products": load_products(data), "movies": load_movies(data)}
    suites: dict[str, list[Task]] = {"train": [], "test": []}
    for split, n in (("train", train), ("test", test)):
        for domain, items in pools.items():
            suites[split] += build_split(domain, split, items, n, seed)
        write_tasks(out / f"{split}.jsonl", suites[split])
    info = manifest(suites, out, seed, write_licences(data, out))
    info["pools"] = {d: len(items) for d, items in pools.items()}
    return write_manifest(out, info)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=REPO_ROOT.parent / "shared" / "data",
        help="folder of the shared data (default: ../shared/data from the repo root)",
    )
    parser.add_argument(
        "--out", type=Path, default=REPO_ROOT / "tasks" / "clarify", help="output folder"
    )
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--train", type=int, default=250, help="train tasks per domain")
    parser.add_argument("--test", type=int, default=100, help="test tasks per domain")
    args = parser.parse_args(argv)
    info = generate(args.data, args.out, args.seed, args.train, args.test)
    print(json.dumps(info["counts"], indent=2))


if __name__ == "__main__":
    main()
