"""Per-run rate limits: requests and tokens per minute, shared by every thread of a run."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable


class RateLimiter:
    """Sliding one-minute window over requests and tokens; ``acquire`` blocks until both fit."""

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.rpm, self.tpm = requests_per_minute, tokens_per_minute
        self.clock, self.sleep = clock, sleep
        self._events: deque[tuple[float, int]] = deque()
        self._lock = threading.Lock()

    def acquire(self, tokens: int = 0) -> None:
        """Wait until one more request of ``tokens`` stays within both limits, then record it."""
        if self.rpm is None and self.tpm is None:
            return
        while True:
            with self._lock:
                wait = self._wait_for(tokens)
                if wait <= 0:
                    self._events.append((self.clock(), tokens))
                    return
            self.sleep(wait)

    def _wait_for(self, tokens: int) -> float:
        now = self.clock()
        while self._events and self._events[0][0] <= now - 60.0:
            self._events.popleft()
        waits = [0.0]
        if self.rpm is not None and len(self._events) + 1 > self.rpm:
            waits.append(self._events[len(self._events) - int(self.rpm)][0] + 60.0 - now)
        if self.tpm is not None and self._events:
            used, budget = sum(t for _, t in self._events), self.tpm - min(tokens, self.tpm)
            for ts, t in self._events:  # drop the oldest until the new request fits
                if used <= budget:
                    break
                used -= t
                waits.append(ts + 60.0 - now)
        return max(waits)
