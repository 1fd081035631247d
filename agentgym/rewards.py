"""What an env may report as a reward and an outcome, checked wherever one enters agentgym.

One rule, here and nowhere else: a reward (a step's, and an episode's return) is a finite real
number with ``abs(r) <= REWARD_LIMIT``; ``info["success"]`` is a bool; ``info["score"]`` is a
finite number in ``[0, 1]``. A value past these is the env's mistake, not a signal: left in, one
``inf`` turns every weight of a trained policy into NaN, and a ``"false"`` string counts as a
success. Where a value enters (:meth:`agentgym.episode.Episode.record_step`, the trainer's env
pool, an episode record a harness program writes, the ``openenv:`` client) it is refused with a
:class:`RewardError`, and that episode becomes an ``error`` episode saying why; the run goes on.
"""

from __future__ import annotations

import math
from typing import Any

REWARD_LIMIT = 1e6  # the messages below say 1e6
"""The largest reward magnitude accepted: far past any env's scale, far below where float32
losses and their gradients overflow."""


class RewardError(ValueError):
    """An env reported a reward, success or score outside what agentgym accepts."""


def _is_bool(value: Any) -> bool:
    """A Python or NumPy bool (an env computing success with NumPy reports ``numpy.bool_``)."""
    return isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b"


def _real(value: Any) -> float | None:
    """``value`` as a float if it is a real number (not a bool, not text), else None."""
    if _is_bool(value) or isinstance(value, (str, bytes)):
        return None
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def check_reward(value: Any, what: str = "reward") -> float:
    """``value`` as a float if it is a finite number within ``REWARD_LIMIT``, else a
    :class:`RewardError` naming ``what`` and the allowed range."""
    number = _real(value)
    if number is None or not math.isfinite(number) or abs(number) > REWARD_LIMIT:
        raise RewardError(
            f"{what} is {_shown(value)}: refused, rewards are finite numbers in [-1e6, 1e6]"
        )
    return number


def check_success(value: Any) -> bool:
    """``info["success"]`` as a bool (None: not said, False); anything but a bool is refused."""
    if value is None:
        return False
    if _is_bool(value):
        return bool(value)
    raise RewardError(f"info['success'] is {_shown(value)}: refused, success is true or false")


def check_score(value: Any) -> float:
    """``info["score"]`` as a float in [0, 1] (None: not said, 0.0); anything else is refused."""
    if value is None:
        return 0.0
    number = _real(value)
    if number is None or not 0.0 <= number <= 1.0:  # NaN fails both comparisons
        raise RewardError(
            f"info['score'] is {_shown(value)}: refused, a score is a number in [0, 1]"
        )
    return number


def _shown(value: Any) -> str:
    """``value`` for an error line: its repr, cut, and its type where the repr hides it."""
    text = repr(value)
    text = text if len(text) <= 40 else text[:37] + "..."
    return text if isinstance(value, (int, float)) else f"{text} ({type(value).__name__})"
