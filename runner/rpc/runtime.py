"""The runner's live state, shared by the RPC namespaces through one context object."""

import asyncio
import os
import time
from collections import Counter
from dataclasses import dataclass, field

from plugkit import __version__


# Upper bounds in milliseconds; the last bucket catches the rest.
BUCKETS_MS = (0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 1000, float("inf"))


class Latency:
    """Per-method latency histograms, cheap enough to record on every call."""

    def __init__(self) -> None:
        self._hist: dict[str, list[int]] = {}

    def record(self, method: str, seconds: float) -> None:
        counts = self._hist.setdefault(method, [0] * len(BUCKETS_MS))
        ms = seconds * 1000
        for i, bound in enumerate(BUCKETS_MS):
            if ms <= bound:
                counts[i] += 1
                return

    def snapshot(self) -> dict[str, dict[str, int]]:
        labels = [f"le_{b:g}ms" if b != float("inf") else "inf" for b in BUCKETS_MS]
        return {m: dict(zip(labels, c)) for m, c in self._hist.items()}


@dataclass
class Runtime:
    """Owned by the app (stored under an AppKey); one per runner start."""

    home: str
    port: int
    token: str
    runner_id: str
    started_at: float = field(default_factory=time.time)
    pid: int = field(default_factory=os.getpid)
    version: str = __version__
    shutdown: asyncio.Event = field(default_factory=asyncio.Event)
    requests: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    latency: Latency = field(default_factory=Latency)
    boot_reap: dict = field(default_factory=dict)

    def uptime(self) -> float:
        return max(0.0, time.time() - self.started_at)
