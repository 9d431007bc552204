"""The finished tasks held in memory across every session: past the cap, the oldest finished leave first.

A finished task costs ~11 KB of runner memory (its output buffer, its record); the per-session
cap (manager.KEEP_FINISHED) alone lets a runner serving many sessions grow without bound. What
leaves memory stays in the ledger, so task.status (exec:status) still answers for it.
"""

from collections import OrderedDict

from runner.core.tasks.task import Task

# ~22 MiB of finished tasks at most, however many sessions the runner serves.
KEEP_FINISHED_TOTAL = 2048


class FinishedTasks:
    """Finish order of every finished task in memory (a rehydrated one counts as just finished)."""

    def __init__(self) -> None:
        self._order: "OrderedDict[int, Task]" = OrderedDict()

    def __len__(self) -> int:
        return len(self._order)

    def add(self, task: Task) -> list[Task]:
        """Hold task as the newest; returns the oldest ones past the cap, which the caller forgets."""
        self._order[task.id] = task
        self._order.move_to_end(task.id)
        evicted = []
        while len(self._order) > KEEP_FINISHED_TOTAL:
            evicted.append(self._order.popitem(last=False)[1])
        return evicted

    def discard(self, task_ids) -> None:
        """These left memory another way (the per-session cap, a forget, their session's end)."""
        for task_id in task_ids:
            self._order.pop(task_id, None)
