"""Build ``data/layouts.json`` from ALFRED's floor plans (``FloorPlan*-objects.json``/``-openable.json``).

Per floor plan: its room type, its receptacles in the scene encoding (``cabinet 1*, countertop 1``;
``*`` marks ALFWorld's openable types) and the object types present. Receptacle instances come
from ``-openable.json`` (one entry per instance, numbered in the order of their ids); receptacle
types present in ``-objects.json`` but absent there (stove burners, coffee machines, toasters,
toilets, towel holders ...) get one instance, four for stove burners, as ALFRED kitchens have.

    python -m agentgym.envs.household.layouts --data ../shared/data
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

from agentgym.envs.household.catalog import catalog

HERE = Path(__file__).resolve().parent


def room_of(number: int) -> str:
    """ALFRED's room type of a floor plan number."""
    for room, (lo, hi) in catalog().raw["rooms"].items():
        if lo <= number <= hi:
            return str(room)
    raise ValueError(f"floor plan {number} is in no ALFRED room range")


def receptacle_type(instance_id: str) -> str:
    """``Sink|-01.90|+00.97|-01.50|SinkBasin`` -> ``sinkbasin``; ``Cabinet|...`` -> ``cabinet``."""
    parts = instance_id.split("|")
    return (parts[4] if len(parts) > 4 else parts[0]).lower()


def build_layout(number: int, objects: list[str], instances: list[str]) -> dict[str, object]:
    """One floor plan's entry."""
    cat = catalog()
    by_type: dict[str, list[str]] = defaultdict(list)
    for inst in sorted(instances):
        rtype = receptacle_type(inst)
        if rtype in cat.can_contain:
            by_type[rtype].append(inst)
    counts = {t: len(v) for t, v in by_type.items()}
    extra = {k.lower(): v for k, v in cat.raw["extra_receptacles"].items()}
    for name in objects:
        t = name.lower()
        if t in cat.can_contain and t not in counts:
            counts[t] = extra.get(t, 1)
    names = [
        f"{t} {i}{'*' if t in cat.openable else ''}"
        for t in sorted(counts)
        for i in range(1, counts[t] + 1)
    ]
    present = sorted({o.lower() for o in objects} - set(counts))
    return {"room": room_of(number), "receptacles": ", ".join(names), "objects": present}


def build_layouts(data: Path) -> dict[str, dict[str, object]]:
    """Every floor plan of ``<data>/alfworld/layouts``, keyed ``FloorPlan<N>``, in number order."""
    folder = data / "alfworld" / "layouts"
    numbers = sorted(
        int(m[1])
        for p in folder.glob("FloorPlan*-objects.json")
        if (m := re.search(r"(\d+)", p.name))
    )
    out = {}
    for n in numbers:
        objects = json.loads((folder / f"FloorPlan{n}-objects.json").read_text())
        instances = json.loads((folder / f"FloorPlan{n}-openable.json").read_text())
        out[f"FloorPlan{n}"] = build_layout(n, objects, list(instances))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=HERE.parents[1].parent / "shared" / "data")
    args = parser.parse_args()
    layouts = build_layouts(args.data)
    path = HERE / "data" / "layouts.json"
    path.write_text(json.dumps(layouts, indent=0, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {len(layouts)} floor plans to {path}")


if __name__ == "__main__":
    main()
