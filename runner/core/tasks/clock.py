"""The clock the task core reads and schedules timeouts on: the event loop's in the runner, a
hand-driven one in unit tests (tests/support/fake_clock.py), so a timeout is a step, not a sleep."""

import asyncio
import time
from typing import Callable, Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def time(self) -> float:
        """Wall-clock seconds (task start and end times)."""
        ...

    def monotonic(self) -> float:
        """Seconds for intervals (session idleness)."""
        ...

    def call_later(self, delay_s: float, fn: Callable[[], object]) -> Timer:
        """Call fn once after delay_s; cancel() stops it."""
        ...


class LoopClock:
    """The real one: wall and monotonic time, timers on the running event loop."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def call_later(self, delay_s: float, fn: Callable[[], object]) -> Timer:
        return asyncio.get_running_loop().call_later(delay_s, fn)
