"""Reading the domain data shipped in ``data/`` (tau2-bench and tau-bench files, some gzipped)."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"


def data_path(relative: str) -> Path:
    """The path of a shipped file, preferring its ``.gz`` form."""
    path = DATA / relative
    if path.exists():
        return path
    gz = path.with_name(path.name + ".gz")
    if gz.exists():
        return gz
    raise FileNotFoundError(f"no data file {relative!r} under {DATA} (nor {gz.name})")


@cache
def read_text(relative: str) -> str:
    """A shipped text file (policy, guidelines), read once per process."""
    path = data_path(relative)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return str(fh.read())


def read_json(relative: str) -> Any:
    """A shipped JSON file."""
    return json.loads(read_text(relative))


def read_jsonl(relative: str) -> list[Any]:
    """A shipped JSON-lines file."""
    return [json.loads(line) for line in read_text(relative).splitlines() if line.strip()]
