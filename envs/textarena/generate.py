"""Write the suites ``tasks/textarena/<Game>.jsonl`` (seeds 0..19) and their manifest; needs no
TextArena: ``python -m agentgym.envs.textarena.generate``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentgym.envs.textarena.games import NAMESPACE, SINGLE_PLAYER, SUITE_SIZE, TWO_PLAYER, env_id
from agentgym.task import Task, TaskSuite, write_manifest, write_tasks


def suite(game: str, size: int = SUITE_SIZE) -> TaskSuite:
    """The suite of a wrapped game: seeds 0..size-1."""
    two = game in TWO_PLAYER
    tasks = [
        Task(
            id=f"{game}-seed{seed}",
            env=env_id(game),
            split="test",
            instruction=f"Play TextArena's {game}" + (" as player 0." if two else "."),
            config={"seed": seed},
            tags=["textarena", "two-player" if two else "single-player"],
        )
        for seed in range(size)
    ]
    return TaskSuite(env_id(game), tasks)


def write_suites(out: Path) -> dict[str, Any]:
    """Write ``<Game>.jsonl`` for every wrapped game and the manifest (no TextArena needed)."""
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for game in [*SINGLE_PLAYER, *TWO_PLAYER]:
        counts[game] = write_tasks(out / f"{game}.jsonl", suite(game).tasks)
    return write_manifest(
        out,
        {
            "generator": "python -m agentgym.envs.textarena.generate",
            "source": "TextArena 0.7 (pip install textarena); a task is the seed of its reset",
            "suites": counts,
        },
    )


if __name__ == "__main__":
    from importlib import resources

    print(write_suites(Path(str(resources.files("agentgym.tasks"))) / NAMESPACE))
