"""Reading a file for a caller without leaving the caller's root: the path is walked from the
root's descriptor one component at a time, no component may be a symbolic link, and only a
regular file is read. What the runner reads of a workspace for a caller goes through here (search
and its digest, the gates' config, .prd and state, receipts, memories, language plugins): a
worker's worktree is a workspace of its own, and the runner sees files its sandbox cannot.
A link inside the root to a file inside it is refused too: that file is read under its own path.

Why a walk and not `realpath` then `open`: the caller can swap a checked component for a link
between the check and the open (a sandboxed worker writes its worktree while the runner reads
it). Here every component is opened with O_NOFOLLOW relative to the descriptor of the one
before, so what is opened is what was checked; nothing outside the root is ever opened, not even
to look at it (opening some devices acts). The last open is O_NONBLOCK, so a FIFO planted in
place of a file cannot hold the open, and fstat refuses it (and sockets, devices) before a read.
A hard link cannot reach further than the linker could read itself: link(2) needs the file
visible on the same mount, and protected_hardlinks asks for ownership or read-write access."""

import errno
import os
import stat
from typing import BinaryIO

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def parts(rel: str) -> list[str] | None:
    """The components of a relative path, or None for one that could climb out (.., absolute)."""
    if not rel or rel.startswith("/") or "\0" in rel:
        return None
    out = [p for p in rel.split("/") if p not in ("", ".")]
    return None if not out or ".." in out else out


def relative(root: str, path: str) -> str:
    """path (absolute, or relative to root) as a path relative to root, lexically: never resolved."""
    if not os.path.isabs(path):
        return path
    rel = os.path.relpath(os.path.normpath(path), os.path.normpath(root))
    return "" if rel.startswith("..") else rel


def open_fd(root: str, rel: str) -> int:
    """A read descriptor of root/rel, a regular file reached without a link. Raises OSError:
    FileNotFoundError when it is not there, ELOOP or ENOTDIR through a link, EINVAL for
    anything but a regular file (a FIFO, a socket, a device, a directory) or a path out."""
    names = parts(rel)
    if names is None:
        raise OSError(errno.EINVAL, "not a path inside the root", rel)
    fd = os.open(root, _DIR)
    try:
        for name in names[:-1]:
            nxt = os.open(name, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
        out = os.open(names[-1], _FILE, dir_fd=fd)
    finally:
        os.close(fd)
    try:
        if stat.S_ISREG(os.fstat(out).st_mode):
            return out
    except OSError:
        pass
    os.close(out)
    raise OSError(errno.EINVAL, "not a regular file", rel)


def open_beneath(root: str, path: str) -> BinaryIO:
    """open(path, "rb") for a file of the workspace at root, confined as open_fd is."""
    return os.fdopen(open_fd(root, relative(root, path)), "rb")


def open_in(root: str, rel: str) -> int | None:
    """open_fd, or None where it raises."""
    try:
        return open_fd(root, rel)
    except OSError:  # ELOOP or ENOTDIR: a link on the way; ENXIO: a socket; gone
        return None


def read_in(root: str, rel: str, limit: int) -> bytes | None:
    """Up to limit bytes of root/rel (see open_in), or None when it may not be read."""
    fd = open_in(root, rel)
    if fd is None:
        return None
    try:
        chunks, left = [], limit
        while left > 0:
            got = os.read(fd, min(left, 1 << 20))
            if not got:
                break
            chunks.append(got)
            left -= len(got)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def is_file_in(root: str, rel: str) -> bool:
    """root/rel is a regular file reached without a link (its size and mtime may be trusted)."""
    fd = open_in(root, rel)
    if fd is None:
        return False
    os.close(fd)
    return True


def list_in(root: str, rel: str) -> list[str]:
    """The names in directory root/rel when it is reached without a link; [] otherwise."""
    names = parts(rel)
    if names is None:
        return []
    try:
        fd = os.open(root, _DIR)
    except OSError:
        return []
    try:
        for name in names:
            nxt = os.open(name, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return sorted(os.listdir(fd))
    except OSError:
        return []
    finally:
        os.close(fd)
