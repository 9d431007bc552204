"""The landing queue's guesses (a merge train): each green branch, as it joins the queue, is
integrated onto the tip the entries ahead of it are expected to leave, and its check runs on that
tree at once, beside theirs. In its turn (queue.py, one at a time, in order) it lands on that very
result when the tip is what it guessed, so its check ran on exactly the tree that lands; else (an
entry ahead was evicted, or the branch moved otherwise) it is integrated and checked again then.

Why: the branches of a wave go green within a second of each other, and checking each only in its
turn made the landings serial (measured: 8 items, each rebase + checkout + check + landing in turn,
2.4 s of a 12 s run on a loaded 2-core machine). The guess changes no ref: the item's branch is
moved to its rebase, and the run's branch advanced, in the turn, under the landing lock.
"""

import asyncio
from dataclasses import dataclass
from typing import Any, Callable, Coroutine, Optional

from runner.core.tasks.task import Task
from runner.core.work import git
from runner.core.work.model import QueueEntry
from runner.core.work.queue import ACTIVE


@dataclass
class Guess:
    """One entry integrated onto `base` and checked there."""

    base: str  # the run branch's tip it was integrated onto
    done: Optional[git.Integrated] = None
    verified: Optional[Task] = None  # the check on done.sha (None: the tree did not change)
    failed: Optional[BaseException] = None  # how it failed on `base`: raised in its turn if `base` holds

    @property
    def after(self) -> str:
        """The tip its turn leaves if the guess holds: its result, or `base` when it will be evicted."""
        return self.done.sha if self.done is not None and self.failed is None else self.base


class Train:
    """The live entries' guesses, by (item, attempt), each with the tip it expects to leave (set once
    it is integrated, before its check ends: the entry behind integrates onto it at once, so the
    checks of a queue run side by side; a red one only sends those behind to integrate again)."""

    def __init__(self) -> None:
        self.guesses: dict[tuple[str, int], tuple["asyncio.Task[Guess]", "asyncio.Future[str]"]] = {}

    def ahead(self, queue: list[QueueEntry], entry: QueueEntry) -> Optional["asyncio.Future[str]"]:
        """The tip the nearest active entry before `entry` expects to leave (None: it is the head)."""
        before = queue[:next(i for i, e in enumerate(queue) if e is entry)]
        for e in reversed(before):
            if e.state in ACTIVE:
                got = self.guesses.get((e.item, e.attempt))
                return got[1] if got is not None else None
        return None

    def start(self, entry: QueueEntry, guess: Callable[["asyncio.Future[str]"], Coroutine[Any, Any, Guess]],
              ) -> "asyncio.Task[Guess]":
        leaves: "asyncio.Future[str]" = asyncio.get_running_loop().create_future()
        task = asyncio.get_running_loop().create_task(guess(leaves), name=f"plugkit-guess-{entry.item}")
        self.guesses[(entry.item, entry.attempt)] = (task, leaves)
        return task

    async def end(self, entry: QueueEntry, task: "asyncio.Task[Guess]") -> None:
        """Its guess gone with its entry (landed, evicted, stopped): cancelled if still running."""
        _, leaves = self.guesses.pop((entry.item, entry.attempt), (task, None))
        task.cancel()
        await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # retrieved: a guess that failed was handled (or not needed) by its turn
        if leaves is not None and not leaves.done():
            leaves.cancel()  # the entry behind integrates onto the tip as it is


async def settled(task: Optional["asyncio.Future"]) -> Any:
    """A guess (or an expected tip) once it ended; None when there is none or it did not end with
    one (cancelled, a bug: the entry then integrates in its turn, as without a guess). Never raises
    its cancellation into the caller: an entry ahead that left must not end the one behind."""
    if task is None:
        return None
    await asyncio.wait({task})
    if task.cancelled() or task.exception() is not None:
        return None
    return task.result()
