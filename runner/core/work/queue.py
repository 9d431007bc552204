"""The landing queue of a run's branch: green branches land one at a time, in the order they went
green; each is rebased (or merged) onto the latest tip, checked again on that tree, and lands, or
is evicted back to its item with what broke it (the conflict's files and hunks, or the check's
output tail), for a next attempt that starts from the new tip.

The queue is plain data on the run (Run.queue: QueueEntry, saved with it), so `work status`, the
page and a restarted runner read the same order and states (plugkit.vocab.WORK_QUEUE_STATES).
"""

import asyncio
import contextlib
from typing import AsyncIterator, Callable, Optional

from plugkit.vocab import WORK_QUEUE_STATES, WORK_REJECTED as REJECTED
from runner.core.work.model import Failed, ItemRun, QueueEntry, Run

ACTIVE = ("waiting", "rebasing", "checking")
MAX_ENDED = 20  # landed/evicted entries kept on the run, newest last (the queue's recent history)
CONTEXT_BYTES = 3072  # of an eviction's context: hunks or a check's output, tail-biased
CONTEXT_LINES = 2  # lines shown around each conflict region


class LandingQueue:
    """One run's queue (one target branch). `turn` admits its entries one at a time, oldest green first."""

    def __init__(self, run: Run, clock: Callable[[], float], changed: Callable[[], None]) -> None:
        self.run, self.clock, self.changed = run, clock, changed
        self._moved = asyncio.Condition()
        for e in run.queue:  # a dead runner's entries: their attempts start over, from the new tip
            if e.state in ACTIVE:
                self._set(e, "evicted", "the runner stopped while it was in the queue")

    def join(self, it: ItemRun, sha: str) -> QueueEntry:
        entry = QueueEntry(item=it.id, attempt=it.attempt, sha=sha, green_at=self.clock(), moved_at=self.clock())
        self.run.queue.append(entry)
        ended = [e for e in self.run.queue if e.state not in ACTIVE]
        for old in ended[:max(0, len(ended) - MAX_ENDED)]:  # bounded: the oldest ends go first
            self.run.queue.remove(old)
        self.changed()
        return entry

    @contextlib.asynccontextmanager
    async def turn(self, entry: QueueEntry) -> AsyncIterator[None]:
        """Until `entry` is the oldest active entry; it ends landed or evicted whatever happens inside
        (an error, a stop): the next entry's turn never waits on one that left."""
        try:
            async with self._moved:
                await self._moved.wait_for(lambda: self._head() is entry)
            yield
        finally:
            if entry.state in ACTIVE:  # left without landing: a held item, a stop, the runner stopping
                self._set(entry, "evicted", entry.note or "left the queue without landing")
            async with self._moved:
                self._moved.notify_all()

    def _head(self) -> Optional[QueueEntry]:
        return next((e for e in self.run.queue if e.state in ACTIVE), None)

    def move(self, entry: QueueEntry, state: str, landed: Optional[str] = None) -> None:
        entry.landed = landed or entry.landed
        self._set(entry, state, entry.note)

    def evict(self, entry: QueueEntry, it: ItemRun, why: str, context: str) -> Failed:
        """The entry evicted; the Failed its attempt raises: a failed pass whose next attempt's prompt
        carries `context` (ItemRun.evicted, set by the attempt's loop)."""
        entry.context = tail(context)
        self._set(entry, "evicted", why)
        it.evictions += 1
        kept = f"; its work: `git diff {it.base[:12]} {entry.sha[:12]}`" if it.base else ""  # objects stay in the store
        return Failed(REJECTED, "evicted", f"evicted from the landing queue of {self.run.branch}: {why}{kept}",
                      entry.context)

    def _set(self, entry: QueueEntry, state: str, note: Optional[str]) -> None:
        assert state in WORK_QUEUE_STATES, state
        entry.state, entry.note, entry.moved_at = state, note, self.clock()
        self.changed()


def tail(text: str, limit: int = CONTEXT_BYTES) -> str:
    """`text` within `limit` bytes, its end kept (where a check says what failed), cut at a line."""
    data = text.encode()
    if len(data) <= limit:
        return text
    kept = data[-limit:].decode(errors="ignore").partition("\n")[2]
    return f"... ({len(data) - len(kept.encode())} bytes before cut)\n{kept}"


def hunks(texts: dict[str, str]) -> str:
    """Each conflicted file's conflict regions (<<<<<<< to >>>>>>>) with a little context, as git
    left them; a file with no markers (binary, deleted on one side) is named only."""
    out: list[str] = []
    for path, text in texts.items():
        lines = text.splitlines()
        regions, start = [], None
        for n, line in enumerate(lines):
            if line.startswith("<<<<<<<") and start is None:
                start = n
            elif line.startswith(">>>>>>>") and start is not None:
                regions.append((start, n))
                start = None
        if not regions:
            out.append(f"--- {path}: conflicts (no text hunks: binary, or deleted on one side)")
            continue
        for a, b in regions:
            lo, hi = max(0, a - CONTEXT_LINES), min(len(lines), b + 1 + CONTEXT_LINES)
            out.append(f"--- {path} lines {lo + 1}-{hi}")
            out += [ln[:300] for ln in lines[lo:hi]]
    return "\n".join(out)
