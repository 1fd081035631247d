"""Write the suites ``tasks/skyrl/<env>.jsonl`` (generated GSM8K-shaped arithmetic problems, in
SkyRL's row format) and their manifest: ``python -m agentgym.envs.skyrl.generate``."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from agentgym.envs.skyrl.env import BUILTIN, NAMESPACE
from agentgym.task import Task, write_manifest, write_tasks

INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'
"""The GSM8K instruction of SkyRL's own dataset script (examples/gsm8k/gsm8k_dataset.py)."""


def arithmetic_rows(n: int, seed: int = 0) -> list[tuple[str, int]]:
    """``n`` two-step arithmetic word problems and their answers (seeded): GSM8K-shaped rows for
    tests and smoke runs; a real GSM8K file converts with :func:`task_from_row`."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        boxes, per, eaten = rng.randint(3, 12), rng.randint(4, 15), rng.randint(1, 20)
        rows.append(
            (
                f"A shop has {boxes} boxes with {per} apples in each box. It sells {eaten} apples. "
                "How many apples are left?",
                boxes * per - eaten,
            )
        )
    return rows


def task_from_row(
    env: str, task_id: str, question: str, answer: str | int, split: str = "test"
) -> Task:
    """One agentgym task from a GSM8K question and answer, as SkyRL's dataset script builds rows."""
    prompt = [{"role": "user", "content": f"{question} {INSTRUCTION}"}]
    extras = {"reward_spec": {"method": "rule", "ground_truth": str(answer)}}
    if env == "gsm8k_multi_turn":
        extras["max_turns"] = 5
    return Task(
        id=task_id,
        env=f"{NAMESPACE}/{env}",
        split=split,
        instruction=question,
        config={"prompt": prompt, "extras": extras},
        tags=["skyrl", "arithmetic"],
    )


def write_suites(out: Path, n: int = 20) -> dict[str, Any]:
    """Write ``<env>.jsonl`` for every wrapped built-in and the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for env in BUILTIN:
        tasks = [
            task_from_row(env, f"arith-{i}", q, a) for i, (q, a) in enumerate(arithmetic_rows(n))
        ]
        counts[env] = write_tasks(out / f"{env}.jsonl", tasks)
    return write_manifest(
        out,
        {
            "generator": "python -m agentgym.envs.skyrl.generate",
            "source": "generated two-step arithmetic word problems (seed 0) in SkyRL's GSM8K row "
            "format; GSM8K itself is not bundled",
            "suites": counts,
        },
    )


if __name__ == "__main__":
    from importlib import resources

    print(write_suites(Path(str(resources.files("agentgym.tasks"))) / NAMESPACE))
