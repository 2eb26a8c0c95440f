"""Admission: a bounded number of items in the service (waiting or running), 429 beyond it.

The unit is an item, not a request: a batch of 64 candidates weighs 64. A request is admitted
whole or not at all (no answer is ever split between "done" and "come back later"), and an
item leaves only when its check has really ended, even when its request has already been
answered with a timeout, so the number of checks the service holds, and with it its memory,
never exceeds the cap. `retry_after` estimates when a slot frees up from the mean time of the
last checks, for the `Retry-After` header of a 429.
"""

from __future__ import annotations

import math
import threading
from collections import deque


class Admission:
    """Counts items in the service against `capacity`; `workers` run at once."""

    def __init__(self, capacity: int, workers: int) -> None:
        self.capacity = capacity
        self.workers = max(1, workers)
        self._held = 0
        self._lock = threading.Lock()
        self._recent: deque[float] = deque(maxlen=64)  # seconds of the last checks

    def admit(self, count: int) -> bool:
        """Take `count` slots, or none (False) when they do not all fit now."""
        with self._lock:
            if self._held + count > self.capacity:
                return False
            self._held += count
            return True

    def release(self, seconds: float | None = None) -> None:
        """One item has ended (its check took `seconds`, when it ran)."""
        with self._lock:
            self._held = max(0, self._held - 1)
            if seconds is not None:
                self._recent.append(seconds)

    @property
    def held(self) -> int:
        with self._lock:
            return self._held

    def retry_after(self) -> int:
        """Whole seconds until about a worker's share of the queue has drained (at least 1)."""
        with self._lock:
            mean = sum(self._recent) / len(self._recent) if self._recent else 1.0
            waves = self._held / self.workers
        return max(1, math.ceil(mean * max(waves, 1.0)))
