"""What `/metrics` reports: queue length, sessions, checks per second, cache hits.

Counters only (no I/O); the app renders them as Prometheus text (the convention scrapers
read) or, with `?format=json`, as one JSON object. Checks per second is over the last
`WINDOW` seconds of completions.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from typing import Any

WINDOW = 60.0


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self._done: deque[float] = deque()

    def add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self.counts[name] += amount

    def checked(self, route: str) -> None:
        """One item answered by a check (`route`: strict or compile)."""
        now = time.monotonic()
        with self._lock:
            self.counts[f"checks_{route}"] += 1
            self._done.append(now)
            while self._done and now - self._done[0] > WINDOW:
                self._done.popleft()

    def rate(self) -> float:
        now = time.monotonic()
        with self._lock:
            while self._done and now - self._done[0] > WINDOW:
                self._done.popleft()
            return len(self._done) / WINDOW

    def snapshot(self, **gauges: float) -> dict[str, Any]:
        with self._lock:
            out: dict[str, Any] = dict(sorted(self.counts.items()))
        out["checks_per_second"] = round(self.rate(), 4)
        out.update(gauges)
        return out


def prometheus(values: dict[str, Any]) -> str:
    """Prometheus text exposition: one `formalbench_serve_<name> <value>` line each."""
    lines = []
    for name, value in values.items():
        metric = f"formalbench_serve_{name}"
        kind = (
            "counter"
            if name.startswith(("checks_", "requests", "items", "rejected", "errors", "cache_"))
            else "gauge"
        )
        if name == "checks_per_second":
            kind = "gauge"
        lines.append(f"# TYPE {metric} {kind}")
        lines.append(f"{metric} {float(value):g}")
    return "\n".join(lines) + "\n"
