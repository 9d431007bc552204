"""The ledger's journal: a task's start and end records, appended on the event loop before the
answer goes out, reach sqlite later in one transaction per batch (ledger_worker.py).

Why: waking the ledger's thread twice per task put a thread hop, a GIL hand-off and the
sqlite write inside every short task's answer (~0.3 ms of a spaced `task.exec`). An append is
one write(2) of a line; it survives a runner killed with -9 (the page cache has it), which a
job still queued for the thread did not. The next runner of this home replays what a dead one
left before it reads anything.

A file per batch: the loop appends to the current file, a flush hands that file to the thread
with its records and opens the next, and the thread unlinks it once the batch is committed.
Named `<ledger>.journal-<pid>-<start time>-<seq>`, so a boot replays the files of processes no
longer alive only (a recycled pid is another start time), oldest first. A line torn by a crash
mid-write is the only thing lost, and it is the last.
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import fields
from typing import Iterator, Optional

import psutil

from runner.system.ledger import TaskRecord

KINDS = ("start", "end")
_FIELDS = [f.name for f in fields(TaskRecord)]


class Journal:
    """The appending side, on the event loop's thread."""

    def __init__(self, ledger_path: str) -> None:
        self.prefix = f"{ledger_path}.journal-{os.getpid()}-{_born(os.getpid())}-"
        self._seq = 0
        self._fd: Optional[int] = None
        self._path = ""
        self._written = False
        self._open()

    def _open(self) -> None:
        self._seq += 1
        self._path = f"{self.prefix}{self._seq:08d}"
        self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        self._written = False

    def append(self, kind: str, rec: TaskRecord) -> None:
        line = json.dumps([kind, *(getattr(rec, name) for name in _FIELDS)], separators=(",", ":")) + "\n"
        view = memoryview(line.encode())
        while view:
            view = view[os.write(self._fd, view):]  # type: ignore[arg-type]
        self._written = True

    def rotate(self) -> Optional[str]:
        """Close the current file and open the next: the closed file's path, for the thread to
        unlink once its records are committed (None: nothing was written to it, it is reused)."""
        if not self._written:
            return None
        done = self._path
        os.close(self._fd)  # type: ignore[arg-type]
        self._open()
        return done

    def close(self) -> None:
        """At a clean stop, once every batch is committed: the last file goes too."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            if not self._written:
                remove(self._path)


def left_behind(ledger_path: str) -> list[str]:
    """Journal files whose process is gone, oldest first, each process's in append order."""
    found = []
    for path in glob.glob(glob.escape(ledger_path) + ".journal-*-*-*"):
        parts = path.rsplit(".journal-", 1)[1].split("-")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            continue
        pid, born, seq = map(int, parts)
        if _born(pid) == born:
            continue  # alive (a runner stopping, another worker of this process): it commits its own
        try:
            found.append((os.stat(path).st_mtime_ns, seq, path))
        except FileNotFoundError:  # committed meanwhile by the process that wrote it
            continue
    return [path for _, _, path in sorted(found)]


def _born(pid: int) -> Optional[int]:
    """The process's start time in hundredths of a second (None: no such process)."""
    try:
        return int(psutil.Process(pid).create_time() * 100)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def read(path: str) -> Iterator[tuple[str, TaskRecord]]:
    """The records of one file; a line that does not parse (torn by a crash) is skipped."""
    with open(path, "rb") as fh:
        for line in fh:
            try:
                kind, *values = json.loads(line)
                if kind in KINDS and len(values) == len(_FIELDS):
                    yield kind, TaskRecord(*values)
            except (ValueError, TypeError):
                continue


def remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
