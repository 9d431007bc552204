"""A clock the test turns by hand: TaskManager's timeouts fire on advance(), never on a sleep."""

import heapq
import itertools
from typing import Callable


class FakeTimer:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """runner.core.tasks.clock.Clock: wall and monotonic time are the same number, `now`."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now
        self._timers: list[tuple[float, int, Callable[[], object], FakeTimer]] = []
        self._seq = itertools.count()

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def call_later(self, delay_s: float, fn: Callable[[], object]) -> FakeTimer:
        timer = FakeTimer()
        heapq.heappush(self._timers, (self.now + delay_s, next(self._seq), fn, timer))
        return timer

    def pending(self) -> int:
        """Timers armed and not cancelled."""
        return sum(1 for *_, t in self._timers if not t.cancelled)

    def advance(self, seconds: float) -> int:
        """Move time on and fire every timer now due, in order; returns how many fired."""
        self.now += seconds
        fired = 0
        while self._timers and self._timers[0][0] <= self.now:
            _, _, fn, timer = heapq.heappop(self._timers)
            if not timer.cancelled:
                fired += 1
                fn()
        return fired
