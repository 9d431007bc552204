"""Each running task's output, also on disk as it arrives: what survives a runner killed with -9.

The ring buffer in memory stays the fast path; this is its crash copy. Bounded: a
task's bytes go into files of HALF bytes each, `<task_id>.<n>` holding absolute bytes
[n*HALF, (n+1)*HALF), and only the newest two exist, so a task printing 100 MB keeps
at most 2*HALF on disk (and bytes that would be rotated out at once are never
written). The boot after a crash reads the tails of the tasks that were running into
the ledger and empties the directory; a task that ends normally has its files removed
once the ledger holds its record.

Plain os.write on an O_APPEND fd, no userspace buffer: a SIGKILL of the runner
loses nothing that was fed. A write that fails (disk full) turns the spool off for
that task; the task itself never notices.
"""

import os
from typing import Optional

HALF = 64 << 10  # the ledger keeps a 64 KiB tail: two halves always cover it


class Spool:
    def __init__(self, directory: str, task_id: int, half: int = HALF) -> None:
        self.directory, self.task_id, self.half = directory, task_id, half
        self.total = 0
        self._fd: Optional[int] = None
        self._gen = -1
        self._broken = False

    def _path(self, gen: int) -> str:
        return os.path.join(self.directory, f"{self.task_id}.{gen}")

    def write(self, data: bytes) -> None:
        if self._broken or not data:
            return
        start, end = self.total, self.total + len(data)
        self.total = end
        # Only the files of the last two halves survive this write: skip what lies before them.
        pos = max(start, ((end - 1) // self.half - 1) * self.half)
        view = memoryview(data)
        try:
            while pos < end:
                gen = pos // self.half
                if gen != self._gen:
                    self._switch(gen)
                stop = min(end, (gen + 1) * self.half)
                os.write(self._fd, view[pos - start: stop - start])  # type: ignore[arg-type]
                pos = stop
        except OSError:
            self._broken = True
            self.close()

    def _switch(self, gen: int) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        else:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
        self._fd = os.open(self._path(gen), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC,
                           0o600)
        for old in range(max(0, self._gen - 1), gen - 1):
            _unlink(self._path(old))
        self._gen = gen

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def remove(self) -> None:
        """The task's files go (its record, tail included, is in the ledger now)."""
        self.close()
        for gen in (self._gen - 1, self._gen):
            if gen >= 0:
                _unlink(self._path(gen))


def recover(directory: str, tail_bytes: int, half: int = HALF) -> dict[int, tuple[str, int]]:
    """task_id -> (its last tail_bytes as text, how many bytes it printed), for every task
    with spool files left: tasks that were running when the runner died."""
    try:
        names = os.listdir(directory)
    except OSError:
        return {}
    gens: dict[int, list[int]] = {}
    for name in names:
        tid, _, gen = name.partition(".")
        if tid.isdigit() and gen.isdigit():
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


def clear(directory: str) -> None:
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        _unlink(os.path.join(directory, name))


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
