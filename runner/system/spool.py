"""Each running task's output, also on disk as it arrives: what survives a runner killed with -9.

The ring buffer in memory stays the fast path; this is its crash copy. Bounded: a
task's bytes go into files of HALF bytes each, `<task_id>.<n>` holding absolute bytes
[n*HALF, (n+1)*HALF), and only the newest two exist, so a task printing 100 MB keeps
at most 2*HALF on disk (and bytes that would be rotated out at once are never
written). The boot after a crash reads the tails of the tasks that were running into
the ledger and empties the directory; a task that ends normally has its files removed
once the ledger holds its record.

Feeds are batched for FLUSH_S and then written with plain
os.write on an O_APPEND fd: a SIGKILL of the runner loses at most the last FLUSH_S of
output. A write that fails (disk full) turns the spool off for that task; the task
itself never notices.
"""

import asyncio
import os
from typing import Optional

HALF = 64 << 10  # the ledger keeps a 64 KiB tail: two halves always cover it
# A write per feed costs a chatty task ~10 us per line (measured: 100k 15-byte feeds, 0.18 s
# without the spool, 1.16 s with a write each); batching them costs a crash at most this much.
FLUSH_S = 0.02


class Spool:
    def __init__(self, directory: str, task_id: int, half: int = HALF, total: int = 0) -> None:
        """total: a task handed over by a runner's previous image (runner/boot/handover.py)
        already wrote this many bytes into its files here, which go on from there."""
        self.directory, self.task_id, self.half = directory, task_id, half
        self.total = total
        self._fd: Optional[int] = None
        self._gen = (total - 1) // half if total else -1  # a resumed file is appended to, not truncated
        self._broken = False
        # Bytes fed but not yet written: [total - len(_pending), total). Only the last two
        # halves can ever be kept, so nothing older is held either.
        self._pending = bytearray()
        self._timer: Optional[asyncio.TimerHandle] = None

    def _path(self, gen: int) -> str:
        return os.path.join(self.directory, f"{self.task_id}.{gen}")

    def write(self, data: bytes) -> None:
        """Queue data; it reaches the file within FLUSH_S (at once with no event loop). However
        much a task prints meanwhile, one flush writes at most two halves."""
        if self._broken or not data:
            return
        keep = 2 * self.half
        if len(data) >= keep:
            self._pending[:] = memoryview(data)[-keep:]
        else:
            self._pending += data
            if len(self._pending) > keep:
                del self._pending[: len(self._pending) - keep]
        self.total += len(data)
        if self._timer is None:
            try:
                self._timer = asyncio.get_running_loop().call_later(FLUSH_S, self.flush)
            except RuntimeError:  # no event loop (a unit test, a tool): write through
                self.flush()

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._broken or not self._pending:
            return
        end = self.total
        start = end - len(self._pending)
        # Only the files of the last two halves survive: skip what lies before them.
        pos = max(start, ((end - 1) // self.half - 1) * self.half)
        view = memoryview(self._pending)
        try:
            while pos < end:
                gen = pos // self.half
                if gen != self._gen or self._fd is None:
                    self._switch(gen)
                stop = min(end, (gen + 1) * self.half)
                os.write(self._fd, view[pos - start: stop - start])  # type: ignore[arg-type]
                pos = stop
        except OSError:
            self._broken = True
            self.close()
        finally:
            view.release()
            self._pending.clear()

    def _switch(self, gen: int) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        else:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
        fresh = os.O_TRUNC if gen != self._gen else 0  # the same gen: a resumed task's file goes on
        self._fd = os.open(self._path(gen), os.O_WRONLY | os.O_CREAT | fresh | os.O_APPEND | os.O_CLOEXEC,
                           0o600)
        for old in range(max(0, self._gen - 1), gen - 1):
            _unlink(self._path(old))
        self._gen = gen

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def remove(self) -> None:
        """The task's files go (its record, tail included, is in the ledger now)."""
        self.close()
        for gen in (self._gen - 1, self._gen):
            if gen >= 0:
                _unlink(self._path(gen))


def recover(directory: str, tail_bytes: int, half: int = HALF,
            keep: frozenset[int] = frozenset()) -> dict[int, tuple[str, int]]:
    """task_id -> (its last tail_bytes as text, how many bytes it printed), for every task
    with spool files left: tasks that were running when the runner died."""
    try:
        names = os.listdir(directory)
    except OSError:
        return {}
    gens: dict[int, list[int]] = {}
    for name in names:
        tid, _, gen = name.partition(".")
        if tid.isdigit() and gen.isdigit() and int(tid) not in keep:
            gens.setdefault(int(tid), []).append(int(gen))
    found = {}
    for tid, have in gens.items():
        have.sort()
        parts = []
        for gen in have[-2:]:
            try:
                with open(os.path.join(directory, f"{tid}.{gen}"), "rb") as fh:
                    parts.append(fh.read())
            except OSError:
                parts.append(b"")
        # Every file but the newest is full: file n starts at byte n*half.
        total = have[-1] * half + len(parts[-1])
        data = b"".join(parts)[-tail_bytes:]
        while data and data[0] & 0xC0 == 0x80:  # the cut may have split a character
            data = data[1:]
        found[tid] = (data.decode("utf-8", "replace"), total)
    return found


def clear(directory: str, keep: frozenset[int] = frozenset()) -> None:
    """Every task's files but keep's (tasks a runner's previous image handed over, still running)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        tid = name.partition(".")[0]
        if not (tid.isdigit() and int(tid) in keep):
            _unlink(os.path.join(directory, name))


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
