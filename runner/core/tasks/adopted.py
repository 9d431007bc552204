"""Orphans the subreaper adopted, each held to the process tasks that could have left it (tags-only mode).

Without a cgroup per task, `setsid env -i sleep &` leaves a process with no group and no tag
of its task (issue 17.2). It does land on the runner (child subreaper), but nothing says
which task it came from. So each newly seen orphan is attributed to every process task that
ran around the moment it was adopted, and lives until all of those have ended.

"Around the moment" is the moment it is first seen: the sweeper lists our children, then
takes the set of process tasks running. Every task that ran when the orphan was adopted and
still runs is in that set, so no orphan dies while a task that may have left it runs on; a
task that has already ended is not needed there (the orphan is due once no attributed task
runs). A task started since only keeps an orphan alive longer, never kills one early.

Touched from the loop only (task started/ended, the sweep's attribution): the sweeper lists the
runner's children in a worker thread and hands the list back to the loop (runner/core/tasks/
sweeper.py), so no lock guards this state.
"""

from typing import Iterable

Orphan = tuple[int, int]  # (pid, start time in clock ticks since boot)


class AdoptedOrphans:
    def __init__(self) -> None:
        self._live: set[int] = set()  # process tasks running now
        self._known: dict[Orphan, frozenset[int]] = {}

    def task_started(self, task_id: int) -> None:
        self._live.add(task_id)

    def task_ended(self, task_id: int) -> None:
        self._live.discard(task_id)

    def observe(self, children: Iterable[Orphan]) -> list[Orphan]:
        """Attribute the orphans seen for the first time (children: listed just before this call);
        return, and forget, every orphan whose tasks have all ended: the caller kills them."""
        window = frozenset(self._live)
        for orphan in children:
            self._known.setdefault(orphan, window)
        due = [o for o, tasks in self._known.items() if not tasks & self._live]
        for orphan in due:
            del self._known[orphan]
        return due

    def attributed(self, orphan: Orphan) -> frozenset[int] | None:
        return self._known.get(orphan)

    def take_all(self) -> list[Orphan]:
        """Runner stop: every orphan still remembered, forgotten now (the caller kills them)."""
        known, self._known = list(self._known), {}
        return known

    def __len__(self) -> int:
        return len(self._known)
