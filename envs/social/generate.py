"""Deterministic generator of the ``social`` task suites from the Sotopia data.

    python -m agentgym.envs.social.generate [--data ../shared/data] [--out tasks/social]

``all``: the 450 Sotopia env x agent combos (90 scenarios x 5 agent pairs), seat 0, LLM partner.
``hard``: the 70 combos of the 14 Sotopia-hard scenarios. ``negotiation``: the 100 combos of the
20 deal-or-no-deal and craigslist scenarios, both seats (200 tasks), a scripted tit-for-tat
partner and the rule-based judge, for offline runs. Each combo's relationship is the two agents'
Sotopia relationship profile.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from agentgym.cache import sha256_file
from agentgym.envs.social.config import RELATIONSHIPS, AgentProfile, SocialConfig
from agentgym.envs.social.negotiation import parse_deal
from agentgym.task import Task, write_manifest, write_tasks

ENV_ID = "agentgym/Social-v0"
FILES = [
    "agent_profiles.jsonl",
    "environment_profiles.jsonl",
    "relationship_profiles.jsonl",
    "env_agent_combo_storages.jsonl",
    "hard_env_ids.json",
]
NOTICE = """\
The task files in this folder (all.jsonl, hard.jsonl, negotiation.jsonl) are derived from the
Sotopia data: agent profiles, environment profiles, relationship profiles, env x agent combos and
the Sotopia-hard scenario ids, as published in sotopia-lab/sotopia-space (profiles/) and used by
sotopia-pi.

Xuhui Zhou, Hao Zhu, Leena Mathur, Ruohong Zhang, Haofei Yu, Zhengyang Qi, Louis-Philippe
Morency, Yonatan Bisk, Daniel Fried, Graham Neubig, Maarten Sap. "SOTOPIA: Interactive Evaluation
for Social Intelligence in Language Agents." ICLR 2024. https://github.com/sotopia-lab/sotopia

Licence: Creative Commons Attribution-ShareAlike 4.0 International (CC BY-SA 4.0),
https://creativecommons.org/licenses/by-sa/4.0/legalcode . These derived files are shared under
the same licence, with attribution to the authors above. Changes: the records are joined into one
task per combo and seat; for deal-or-no-deal and craigslist scenarios the item counts, points and
prices written in the goals are also given in structured form (config.deal).
"""
NEGOTIATION_SOURCES = ("deal-or-no-deal", "craigslist_bargains")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load(data: Path) -> dict[str, Any]:
    """The Sotopia records, indexed."""
    root = data / "sotopia"
    rels = read_jsonl(root / "relationship_profiles.jsonl")
    return {
        "agents": {a["agent_id"]: a for a in read_jsonl(root / "agent_profiles.jsonl")},
        "envs": {e["env_id"]: e for e in read_jsonl(root / "environment_profiles.jsonl")},
        "relationships": {frozenset((r["agent1_id"], r["agent2_id"])): r for r in rels},
        "combos": read_jsonl(root / "env_agent_combo_storages.jsonl"),
        "hard": json.loads((root / "hard_env_ids.json").read_text())["sotopia_hard_env_id"],
    }


def make_task(
    records: dict[str, Any], combo: dict[str, Any], split: str, seat: int, partner: str
) -> Task:
    env = records["envs"][combo["env_id"]]
    agents = [AgentProfile.model_validate(records["agents"][i]) for i in combo["agent_ids"]]
    relationship = records["relationships"][frozenset(combo["agent_ids"])]
    deal = parse_deal(env["source"], env["scenario"], env["agent_goals"])
    config = SocialConfig(
        env_id=env["env_id"], codename=env["codename"], source=env["source"],
        scenario=env["scenario"], agents=agents, goals=env["agent_goals"],
        relationship=int(relationship["relationship"]), deal=deal, seat=seat, partner=partner,
    )  # fmt: skip
    tags = [env["source"], RELATIONSHIPS[config.relationship]]
    tags += ["hard"] * (env["env_id"] in records["hard"]) + [f"seat{seat}"]
    return Task(
        id=f"{env['codename']}-{combo['combo_id'][-8:].lower()}-s{seat}",
        env=ENV_ID,
        split=split,
        instruction=f"You are {agents[seat].name}. {env['scenario']} Your goal: {env['agent_goals'][seat]}",
        config=config.model_dump(mode="json", exclude_defaults=False),
        gold={"judge": "rule" if deal is not None else "llm"},
        tags=tags,
    )


def suites(records: dict[str, Any]) -> dict[str, list[Task]]:
    combos = sorted(
        records["combos"], key=lambda c: (records["envs"][c["env_id"]]["codename"], c["combo_id"])
    )
    source = {c["combo_id"]: records["envs"][c["env_id"]]["source"] for c in combos}
    return {
        "all": [make_task(records, c, "all", 0, "llm") for c in combos],
        "hard": [make_task(records, c, "hard", 0, "llm") for c in combos if c["env_id"] in records["hard"]],
        "negotiation": [
            make_task(records, c, "negotiation", seat, "scripted:tit-for-tat")
            for c in combos if source[c["combo_id"]] in NEGOTIATION_SOURCES
            for seat in (0, 1)
        ],
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("tasks/social"))
    args = parser.parse_args(argv)
    records = load(args.data)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "generator": "agentgym.envs.social.generate",
        "env": ENV_ID,
        "suites": {},
    }
    for name, tasks in suites(records).items():
        path = args.out / f"{name}.jsonl"
        write_tasks(path, tasks)
        manifest["suites"][name] = {
            "tasks": len(tasks),
            "sources": dict(sorted(Counter(t.tags[0] for t in tasks).items())),
            "sha256": sha256_file(path),
        }
    manifest["data"] = {f: sha256_file(args.data / "sotopia" / f) for f in FILES}
    manifest["source"] = "sotopia-lab/sotopia-space profiles/, sotopia-pi (CC BY-SA 4.0)"
    write_manifest(args.out, manifest)
    (args.out / "LICENSE-sotopia").write_text(NOTICE)
    print(json.dumps(manifest["suites"], indent=2))


if __name__ == "__main__":
    main()
