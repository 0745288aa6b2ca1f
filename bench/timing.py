"""Timing helpers shared by the benchmark scripts."""

from __future__ import annotations

import time
from typing import Any


def best_of(repeat: int, run: Any) -> float:
    """The fastest of ``repeat`` timed calls, in seconds (one untimed call first)."""
    run()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return min(times)
