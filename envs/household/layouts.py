"""Build ``data/layouts.json`` from ALFRED's floor plans (``FloorPlan*-objects.json``/``-openable.json``).

Per floor plan: its room type, its receptacles in the scene encoding (``cabinet 1*, countertop 1``;
``*`` marks ALFWorld's openable types), the receptacles that share a location (``shared``) and
the object types present. Receptacle instances come from ``-openable.json`` (one entry per
instance, numbered in the order of their ids); receptacle types present in ``-objects.json`` but
absent there (stove burners, coffee machines, toasters, toilets, towel holders ...) get one
instance, four for stove burners, as ALFRED kitchens have, each at a location of its own.

``-openable.json`` maps each receptacle to the pose the agent takes to reach it (x, z, rotation,
camera horizon). ALFWorld's problem writer turns that pose into the receptacle's location
(``receptacleAtLocation R loc_bar_<x>_bar_<z>_bar_<rotation>_bar_<horizon>``), so receptacles
with the same pose share a location: in every ALFWorld game of that floor plan, ``go to`` one of
them reaches them all. :func:`sharing_rates` counts them per type.

    python -m agentgym.envs.household.layouts --data ../shared/data
    python -m agentgym.envs.household.layouts --data ../shared/data --rates   # sharing per type
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

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


def build_layout(
    number: int, objects: list[str], instances: list[str], poses: dict[str, list[Any]] | None = None
) -> dict[str, object]:
    """One floor plan's entry (``poses``: ``-openable.json``, for the shared locations)."""
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
    numbered = {inst: f"{t} {i}" for t, v in by_type.items() for i, inst in enumerate(v, 1)}
    present = sorted({o.lower() for o in objects} - set(counts))
    return {
        "room": room_of(number),
        "receptacles": ", ".join(names),
        "shared": shared_groups(numbered, poses or {}),
        "objects": present,
    }


def shared_groups(numbered: dict[str, str], poses: dict[str, list[Any]]) -> str:
    """Receptacles with one pose, as the config's ``shared`` (``"drawer 1, drawer 2; ..."``)."""
    at: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    for inst, name in numbered.items():
        if inst in poses:
            at[tuple(poses[inst])].append(name)
    groups = [sorted(g, key=_name_key) for g in at.values() if len(g) > 1]
    return "; ".join(", ".join(g) for g in sorted(groups, key=lambda g: _name_key(g[0])))


def _name_key(name: str) -> tuple[str, int]:
    kind, _, num = name.rpartition(" ")
    return kind, int(num)


def sharing_rates(data: Path) -> dict[str, tuple[int, int]]:
    """Per receptacle type, over the 120 floor plans' ``-openable.json``: (instances, instances
    whose pose another receptacle has too). Types without poses there stand alone."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for path in (data / "alfworld" / "layouts").glob("FloorPlan*-openable.json"):
        poses = json.loads(path.read_text())
        kept = {i: p for i, p in poses.items() if receptacle_type(i) in catalog().can_contain}
        same: dict[tuple[Any, ...], int] = defaultdict(int)
        for pose in kept.values():
            same[tuple(pose)] += 1
        for inst, pose in kept.items():
            counts[receptacle_type(inst)][0] += 1
            counts[receptacle_type(inst)][1] += same[tuple(pose)] > 1
    return {t: (n, k) for t, (n, k) in sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))}


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
        poses = json.loads((folder / f"FloorPlan{n}-openable.json").read_text())
        out[f"FloorPlan{n}"] = build_layout(n, objects, list(poses), poses)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=HERE.parents[1].parent / "shared" / "data")
    parser.add_argument(
        "--rates", action="store_true", help="print per type how many receptacles share a location"
    )
    args = parser.parse_args()
    if args.rates:
        rates = sharing_rates(args.data)
        for rtype, (n, k) in rates.items():
            print(f"{rtype:18} {n:5} {k:5} {k / n:6.1%}")
        total, shared = (sum(v[i] for v in rates.values()) for i in (0, 1))
        print(f"{'all':18} {total:5} {shared:5} {shared / total:6.1%}")
        return
    layouts = build_layouts(args.data)
    path = HERE / "data" / "layouts.json"
    path.write_text(json.dumps(layouts, indent=0, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {len(layouts)} floor plans to {path}")


if __name__ == "__main__":
    main()
