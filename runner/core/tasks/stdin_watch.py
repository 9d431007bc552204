"""Which tasks sit blocked reading a stdin nobody writes to, and task.wait returning the moment one does.

A task waiting for input looks like any quiet task from outside; an agent would
poll it until the wait ceiling and beyond. The process state says it exactly
(runner.system.procstate), so every answer about a running task carries it.
"""

import asyncio
from typing import Awaitable, TypeVar

from runner.core.tasks.task import Task
from runner.system import procstate

POLL_S = 0.25  # how soon a wait notices a task that started waiting for input
# Output written just before the task blocked may still sit in its pipes: that many
# loop turns let the pipe readers and the waiter run before we answer.
SETTLE_TURNS = 3
W = TypeVar("W")


def waiting(task: Task) -> bool:
    run = task.execution
    if task.finished or run is None or not task.pid:
        return False
    inode_of = getattr(run, "stdin_inode", None)
    inode = inode_of() if inode_of is not None else None
    if inode is None or _buffered(run):
        # Input it was sent and its full pipe has not taken yet: once the task reads, the loop
        # writes it; the task asleep on the emptied pipe meanwhile is about to be fed.
        return False
    return procstate.waiting_for_input(task.pid, inode) is not None


def _buffered(run) -> int:
    buffered = getattr(run, "input_buffered", None)
    return buffered() if buffered is not None else 0


async def wait(task: Task, waiter: Awaitable[W], blocked: W) -> W:
    """The waiter's answer, or `blocked` (an early answer: not matched, not timed out) once
    the task is seen blocked on its stdin: nothing more can come until someone types."""
    pending = asyncio.ensure_future(waiter)
    try:
        while True:
            done, _ = await asyncio.wait({pending}, timeout=POLL_S)
            if done:
                return pending.result()
            if waiting(task):
                for _ in range(SETTLE_TURNS):
                    await asyncio.sleep(0)
                if pending.done():
                    return pending.result()
                # Seen again after those turns: input written in them (a full pipe's rest, the
                # task's next line) woke the task, and "waiting" was already untrue when answered.
                if waiting(task):
                    return blocked
    finally:
        if not pending.done():
            pending.cancel()
            await asyncio.gather(pending, return_exceptions=True)
