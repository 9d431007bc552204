"""DirWatch: which files under a root were written, created, removed or renamed since it was last
asked, from Linux's inotify (one instance per watched root, one watch per directory, no thread):
a query asks it instead of a stat of every file (issue 46: the stat was over half a warm query).

No thread reads the events: the kernel queues each event before the write, unlink or rename that
caused it returns, and changes() drains that queue in the asking thread, so a file saved before a
query began is among the changes that query gets (a reader thread could still be behind). Whatever
this cannot follow file by file (a directory made, removed or moved, the queue overflowed, a watch
gone) is answered with None: the caller stats every file once and arms a new DirWatch first."""

import ctypes
import errno
import os
import struct
import sys

MAX_DIRS = 8192  # directories watched at most; past it the caller stats files as it did before
_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len, then the name
# Each bit as <sys/inotify.h> numbers it: what was done to an entry of a watched directory...
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
# ...or to the directory itself, or to the queue.
IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED, IN_ISDIR = \
    0x400, 0x800, 0x2000, 0x4000, 0x8000, 0x40000000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_EXCL_UNLINK = 0x01000000, 0x02000000, 0x04000000
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC  # a sandbox the runner spawns never inherits it
ENTRY = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
MASK = ENTRY | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK
LOST = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_Q_OVERFLOW | IN_IGNORED  # paths no longer followed

_libc = None


def _inotify():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.inotify_add_watch.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
    return _libc


class DirWatch:
    def __init__(self, root: str, skip: frozenset[str]) -> None:
        """Watches every directory under root but those named in skip (never indexed) and .git,
        never through a link. OSError when inotify is missing, out of instances or watches, or
        the tree has more than MAX_DIRS directories."""
        if not sys.platform.startswith("linux"):
            raise OSError(errno.ENOSYS, "inotify is Linux's")
        libc = _inotify()
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self._fd: int | None = fd
        self._root, self._skip = root, skip | {".git"}
        self._dirs: dict[int, str] = {}  # wd -> the directory's path relative to root ("" for root)
        try:
            for rel in self._tree():
                wd = libc.inotify_add_watch(fd, os.fsencode(os.path.join(root, rel)), MASK)
                if wd < 0:
                    err = ctypes.get_errno()
                    if err in (errno.ENOENT, errno.ENOTDIR):
                        continue  # gone meanwhile: its parent's event says so
                    raise OSError(err, "inotify_add_watch")
                self._dirs[wd] = rel
        except BaseException:
            self.close()
            raise

    def _tree(self) -> list[str]:
        out = [""]
        for d, dirs, _ in os.walk(self._root):  # os.walk follows no link to a directory
            dirs[:] = [x for x in dirs if x not in self._skip]
            rel = os.path.relpath(d, self._root)
            if rel != ".":
                out.append(rel)
            if len(out) > MAX_DIRS:
                raise OSError(errno.ENOSPC, f"more than {MAX_DIRS} directories to watch")
        return out

    def changes(self) -> set[str] | None:
        """The paths (relative to root) of entries written, created, removed or renamed since the
        last call; None when that cannot be said file by file (then this watch is spent: the
        caller closes it, arms a new one and stats every file)."""
        if self._fd is None:
            return None
        events = []
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                break
            if not data:
                break
            events.extend(parse(data))
        return self.follow(events)

    def follow(self, events: list[tuple[int, int, str]]) -> set[str] | None:
        out: set[str] = set()
        for wd, mask, name in events:
            if mask & LOST or wd not in self._dirs:
                return None
            if mask & IN_ISDIR:
                if name in self._skip or not mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO):
                    continue  # __pycache__ made by a test run; a directory's own mtime moved
                return None  # a directory made, removed or moved: its files are not followed one by one
            if name:
                parent = self._dirs[wd]
                out.add(f"{parent}/{name}" if parent else name)
        return out

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def parse(data: bytes) -> list[tuple[int, int, str]]:
    """(wd, mask, name) of each event in a read of an inotify descriptor."""
    out, at = [], 0
    while at + _HEADER.size <= len(data):
        wd, mask, _cookie, size = _HEADER.unpack_from(data, at)
        at += _HEADER.size
        name = data[at:at + size].split(b"\0", 1)[0]
        at += size
        out.append((wd, mask, os.fsdecode(name)))
    return out


def watch(root: str, skip: frozenset[str]) -> DirWatch | None:
    """A DirWatch of root, or None where one cannot be had (not Linux, no instance or watch left,
    a tree too large): the caller then stats every file, as it did before."""
    try:
        return DirWatch(root, skip)
    except OSError:
        return None
