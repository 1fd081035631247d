"""Retries of transient API failures: 429, 5xx, timeouts, dropped connections, malformed JSON.

Exponential backoff with full jitter (AWS's recommendation: spreads a thundering herd), honouring a
server's ``Retry-After``. Anything else (400, 401, 404, a bad request of ours) fails at once.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from pydantic import BaseModel

T = TypeVar("T")

RETRYABLE_STATUS = {408, 409, 429}
RETRYABLE_NAMES = {
    "APITimeoutError",
    "APIConnectionError",
    "Timeout",
    "TimeoutException",
    "ConnectError",
    "ReadTimeout",
    "RemoteProtocolError",
    "ServiceUnavailableError",
    "InternalServerError",
    "RateLimitError",
    "APIResponseValidationError",
}


class RetryPolicy(BaseModel):
    """How often and how patiently to retry."""

    max_attempts: int = 6
    """Calls in all, the first included."""
    initial_backoff_s: float = 0.5
    max_backoff_s: float = 30.0


def is_retryable(exc: BaseException) -> bool:
    """Whether ``exc`` is a transient failure worth retrying."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in RETRYABLE_STATUS or status >= 500
    if isinstance(exc, (json.JSONDecodeError, TimeoutError, ConnectionError)):
        return True
    return any(cls.__name__ in RETRYABLE_NAMES for cls in type(exc).__mro__)


def backoff_delays(policy: RetryPolicy, rng: random.Random | None = None) -> Iterator[float]:
    """Full-jitter exponential delays, one per retry."""
    rng = rng or random.Random()
    for attempt in range(policy.max_attempts - 1):
        yield rng.uniform(0, min(policy.max_backoff_s, policy.initial_backoff_s * 2**attempt))


def retry_after(exc: BaseException) -> float | None:
    """The server's ``Retry-After`` seconds, if it sent one."""
    response = getattr(exc, "response", None)
    value = getattr(response, "headers", {}).get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def call_with_retries(
    fn: Callable[[], T],
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[BaseException], None] | None = None,
) -> T:
    """Call ``fn``; on a retryable error wait and call again, up to the policy's attempts."""
    delays = backoff_delays(policy)
    while True:
        try:
            return fn()
        except Exception as exc:
            delay = next(delays, None)
            if not is_retryable(exc) or delay is None:
                raise
            if on_retry is not None:
                on_retry(exc)
            sleep(max(delay, retry_after(exc) or 0.0))
