"""Between live tasks and the durable ledger: ids from reserved blocks, records out, tasks back in.

A task the ledger knows but memory does not (the runner restarted, or the session's
in-memory history was trimmed) is rebuilt as a finished Task holding its output tail,
so status and output answer the same way for it as for a live one.
"""

import asyncio
import hashlib
import itertools
from typing import Optional

from runner.core.tasks.output import OutputBuffer
from runner.core.tasks.sessions import session_key
from runner.core.tasks.task import SessionKey, Task
from runner.system.ledger import TaskRecord
from runner.system.ledger_worker import LedgerWorker

ID_BLOCK = 256
TAIL_BYTES = 64 << 10


class IdSource:
    """Task ids that never repeat across restarts: blocks reserved durably in the ledger.
    Without a ledger (unit tests) a plain counter."""

    def __init__(self, ledger: Optional[LedgerWorker], first: int = 1) -> None:
        self.ledger = ledger
        self._counter = itertools.count(first)
        self._next, self._end = 1, 0
        # One reservation at a time: 300 execs arriving on an empty block wait for the
        # same one instead of each reserving (and mostly wasting) a block of its own.
        self._refill = asyncio.Lock()

    async def next(self) -> int:
        if self.ledger is None:
            return next(self._counter)
        while self._next > self._end:
            async with self._refill:
                if self._next > self._end:
                    start = await self.ledger.reserve_ids(ID_BLOCK)
                    self._next, self._end = start, start + ID_BLOCK - 1
        value, self._next = self._next, self._next + 1
        return value

    async def release(self) -> None:
        """At a clean stop: the ids of this block not handed out go back (see Ledger.release_ids)."""
        if self.ledger is not None and self._next <= self._end:
            await self.ledger.release_ids(self._next, self._end)
            self._next, self._end = 1, 0


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()


def to_record(task: Task, code_sha256: str) -> TaskRecord:
    return TaskRecord(
        task_id=task.id, session_id=task.session.session_id, cwd=task.cwd, lang=task.lang,
        code_sha256=code_sha256, state=task.state, started_at=task.started_at, ended_at=task.ended_at,
        exit_code=task.exit_code, signal=task.signal, reason=task.reason, message=task.message,
        bytes_out=task.bytes_out, dropped=task.buffer.dropped,
        output_tail=task.buffer.tail_text(TAIL_BYTES) if task.finished else "",
    )


def record_key(rec: TaskRecord) -> SessionKey:
    """The session a record belongs to, by today's rule. A record keeps the cwd its task ran in
    (before sessions were keyed by root, that was the session's cwd, the same path), so the root
    is found from it: records written under the old (id, cwd) key are found from anywhere in
    their workspace too. A workspace marker added or removed since moves the record with it."""
    return session_key(rec.session_id, rec.cwd)


def rehydrate(rec: TaskRecord) -> Task:
    """Also for a listing's records, read without their output (output_tail empty)."""
    buffer = OutputBuffer(max(4, len(rec.output_tail.encode()) + 4))
    if rec.output_tail:
        buffer.write_text("stdout", rec.output_tail)
    task = Task(id=rec.task_id, session=record_key(rec), cwd=rec.cwd, lang=rec.lang, buffer=buffer,
                state=rec.state, started_at=rec.started_at, ended_at=rec.ended_at, exit_code=rec.exit_code,
                signal=rec.signal, reason=rec.reason, message=rec.message)
    task.bytes_out_before = rec.bytes_out - buffer.end  # what the ledger no longer holds
    task.done.set()
    return task
