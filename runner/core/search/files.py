"""Which files of a workspace are indexed, and how each ranks: git's own list where it is a
repository (so .gitignore holds), a bounded walk elsewhere; binaries and huge files skipped.
Only regular files inside the root are read, never through a link (runner/system/confined.py):
the caller may be a sandbox that planted a link to what it cannot read, or a FIFO."""

import hashlib
import os
import re
import weakref
from collections import OrderedDict

from plugkit import confined
from runner.system import git as system_git

MAX_BYTES = 1 << 20  # bigger files are data or generated: not worth an agent's search
MAX_FILES = 50_000
SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".tox",
                       "dist", "build", ".pytest_cache", "target", ".plugkit"})
# path pattern -> rank factor: tests and vendored or generated code below source.
KINDS = (
    ("vendor", re.compile(r"(^|/)(vendor|vendored|third_party|_vendor|site-packages|node_modules)/"), 0.35),
    ("generated", re.compile(r"(_pb2\.py|\.min\.js|\.lock|-lock\.json)$"), 0.3),
    ("test", re.compile(r"(^|/)(tests?|testing|__tests__|spec)/|(^|/)test_[^/]*$|_test\.\w+$|\.spec\.\w+$"), 0.5),
)


def kind(path: str) -> tuple[str, float]:
    for name, pattern, factor in KINDS:
        if pattern.search(path):
            return name, factor
    return "source", 1.0


def list_files(root: str) -> list[str]:
    """Relative paths of the files worth indexing under root."""
    listed = _git_files(root)
    paths = listed if listed is not None else _walk(root)
    return [p for p in paths[:MAX_FILES] if not any(part in SKIP_DIRS for part in p.split("/")[:-1])]


def _git_files(root: str) -> list[str] | None:
    try:
        done = system_git.run_sync(root, "ls-files", "-co", "--exclude-standard", "-z", timeout=30)
    except (OSError, system_git.GitTimeout):
        return None  # no git: walk it
    if done.rc != 0:
        return None  # not a repository: walk it
    out = done.out
    return sorted({p for p in out.decode("utf-8", "surrogateescape").split("\0") if p})


def _walk(root: str) -> list[str]:
    out = []
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("."))
        rel = os.path.relpath(d, root)
        out.extend(n if rel == "." else f"{rel}/{n}" for n in sorted(names))
        if len(out) >= MAX_FILES:
            break
    return out


def read_text(root: str, rel: str, size: int) -> str | None:
    """The file's text, or None for a binary, a huge file, one that is gone, or anything but a
    regular file reached inside root without a link."""
    if size > MAX_BYTES:
        return None
    data = confined.read_in(root, rel, MAX_BYTES + 1)
    if data is None or len(data) > MAX_BYTES or b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def read_indexed(root: str, rel: str, size: int) -> tuple[str | None, str | None]:
    """(the file's text as read_text has it, the digest of its bytes): the digest says whether a
    worktree's file is byte for byte the one its repository's index holds (overlay). A binary
    has a digest and no text; a huge file, a link or a file gone has neither."""
    if size > MAX_BYTES:
        return None, None
    data = confined.read_in(root, rel, MAX_BYTES + 1)
    if data is None or len(data) > MAX_BYTES:
        return None, None
    digest = hashlib.sha256(data).hexdigest()
    return (None if b"\0" in data[:8192] else data.decode("utf-8", "replace")), digest


def read_lines(root: str, rel: str, keep=None) -> list[str]:
    """The file's lines (see read_text), [] when it may not be read. keep: the workspace index's store:
    the lines are kept for it while the file opened has the stamp they were read at (issue 46: a hit's
    file read, decoded and split again by each query that shows it was ~1.5 ms of every query). The
    list is shared: callers slice it, never change it."""
    fd = confined.open_in(root, rel)
    if fd is None:
        return []
    try:
        st = os.fstat(fd)
        stamp = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)
        if keep is not None and (got := _kept_lines(keep, rel, stamp)) is not None:
            return got
        parts, left = [], MAX_BYTES + 1
        while left > 0 and (got_bytes := os.read(fd, min(left, 1 << 20))):
            parts.append(got_bytes)
            left -= len(got_bytes)
    except OSError:
        return []
    finally:
        os.close(fd)
    lines = b"".join(parts).decode("utf-8", "replace").splitlines()
    if keep is not None:
        _keep_lines(keep, rel, stamp, lines)
    return lines


KEPT_BYTES = 8 << 20  # of file lines kept per index between queries, the least recently shown dropped first
# store -> (bytes kept, rel -> (stamp, lines)), guarded by that store's own lock as postings.py's cache is.
_kept: "weakref.WeakKeyDictionary[object, list]" = weakref.WeakKeyDictionary()


def _kept_lines(keep, rel: str, stamp: tuple) -> list[str] | None:
    with keep.lock:
        held = _kept.get(keep)
        got = held[1].get(rel) if held is not None else None
        if got is None or got[0] != stamp:
            return None
        held[1].move_to_end(rel)
        return got[1]


def _keep_lines(keep, rel: str, stamp: tuple, lines: list[str]) -> None:
    with keep.lock:
        held = _kept.setdefault(keep, [0, OrderedDict()])
        old = held[1].pop(rel, None)
        held[0] += stamp[-1] - (old[0][-1] if old is not None else 0)
        held[1][rel] = (stamp, lines)
        while held[0] > KEPT_BYTES and len(held[1]) > 1:
            _, (gone, _) = held[1].popitem(last=False)
            held[0] -= gone[-1]
