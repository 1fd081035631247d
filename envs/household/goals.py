"""The six ALFWorld task types: their goal sentences, and reading a goal back from its sentence.

ALFWorld phrases each goal with a few fixed templates (``put a hot apple in fridge.``,
``heat some egg and put it in diningtable.``); object and receptacle are display type names and
the article is always ``a``, as the real game prints them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

TaskType = Literal[
    "pick_and_place_simple",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "look_at_obj_in_light",
    "pick_two_obj_and_place",
]
TASK_TYPES: tuple[TaskType, ...] = (
    "pick_and_place_simple",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "look_at_obj_in_light",
    "pick_two_obj_and_place",
)
SHORT: dict[TaskType, str] = {
    "pick_and_place_simple": "put",
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
    "look_at_obj_in_light": "examine",
    "pick_two_obj_and_place": "puttwo",
}
"""The short names ReAct and most papers report per type."""

TEMPLATES: dict[TaskType, tuple[str, ...]] = {
    "pick_and_place_simple": (
        "put a {o} in {r}.",
        "put some {o} on {r}.",
        "find some {o} and put it in {r}.",
    ),
    "pick_clean_then_place_in_recep": (
        "put a clean {o} in {r}.",
        "clean some {o} and put it in {r}.",
    ),
    "pick_heat_then_place_in_recep": (
        "put a hot {o} in {r}.",
        "heat some {o} and put it in {r}.",
    ),
    "pick_cool_then_place_in_recep": (
        "put a cool {o} in {r}.",
        "cool some {o} and put it in {r}.",
    ),
    "look_at_obj_in_light": (
        "look at {o} under the {l}.",
        "examine the {o} with the {l}.",
    ),
    "pick_two_obj_and_place": (
        "put two {o} in {r}.",
        "find two {o} and put them in {r}.",
    ),
}
"""ALFWorld's goal templates per task type."""


@dataclass(frozen=True)
class Goal:
    """What winning needs: a task type and the display types it names."""

    task_type: TaskType
    object: str
    receptacle: str | None = None
    lamp: str | None = None

    def sentence(self, variant: int = 0) -> str:
        """The goal as ALFWorld words it (``variant`` picks the template)."""
        templates = TEMPLATES[self.task_type]
        return templates[variant % len(templates)].format(
            o=self.object, r=self.receptacle, l=self.lamp
        )


def _pattern(template: str) -> re.Pattern[str]:
    text = re.escape(template).replace(r"\{o\}", r"(?P<o>\w+)")
    text = text.replace(r"\{r\}", r"(?P<r>\w+)").replace(r"\{l\}", r"(?P<l>\w+)")
    return re.compile(text.removesuffix(r"\.") + r"\.?$")


_PATTERNS = [(t, _pattern(s)) for t, ss in TEMPLATES.items() for s in ss]


@lru_cache(maxsize=4096)
def parse_goal(sentence: str) -> Goal:
    """The goal a task sentence states; ``ValueError`` listing the known forms if none fits."""
    text = " ".join(sentence.strip().lower().split())
    text = text.removeprefix("your task is to: ")
    for task_type, pattern in _PATTERNS:
        m = pattern.match(text)
        if m:
            found = m.groupdict()
            return Goal(task_type, found["o"], found.get("r"), found.get("l"))
    forms = "; ".join(s for ss in TEMPLATES.values() for s in ss)
    raise ValueError(f"goal {sentence!r} matches no ALFWorld goal form ({forms})")
