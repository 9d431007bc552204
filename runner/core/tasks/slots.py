"""Running-task slots: the per-session and runner-wide caps, taken before an exec's first await.

An exec awaits (a block of ids from the ledger, the executor's prepare) between its limit
check and its task's birth. Counting only tasks that exist let 300 concurrent execs all pass
the check (issue 17.9: limit 256, 267 accepted); a slot is taken in the same step as the
check, and given back when the exec fails or its task ends.
"""

from collections import Counter

from plugkit.config import Limits
from plugkit.refusals import LimitReached
from runner.executors.base import SessionKey


class Slots:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._by_session: Counter[SessionKey] = Counter()
        self.taken = 0

    def take(self, key: SessionKey) -> None:
        """Check both caps and take a slot, with no await in between; refuses by LimitReached."""
        mine = self._by_session[key]
        if mine >= self.limits.tasks_per_session:
            raise LimitReached(f"this session already runs {mine} tasks (limit "
                               f"{self.limits.tasks_per_session}); close some with plugkit exec:close")
        if self.taken >= self.limits.running_tasks:
            raise LimitReached(f"the runner already runs {self.taken} tasks (limit "
                               f"{self.limits.running_tasks}); wait for some to finish")
        self._by_session[key] += 1
        self.taken += 1

    def hold(self, key: SessionKey) -> None:
        """A slot for a task that already runs (handed over by the runner's previous image):
        counted, never refused."""
        self._by_session[key] += 1
        self.taken += 1

    def give(self, key: SessionKey) -> None:
        self.taken -= 1
        self._by_session[key] -= 1
        if self._by_session[key] <= 0:
            del self._by_session[key]
