"""A linked worktree's first index is its repository's main checkout's index, copied, keeping only
what the worktree has byte for byte: `plugkit work`'s worktrees (and a person's `git worktree
add`) answer their first query without indexing the repository from scratch.

The copy is made aside and moved into place only once it holds nothing the worktree lacks: a
file the main checkout has and the worktree does not, or has with other bytes (the person's
uncommitted edit), is dropped from it before any query can read it; a file kept is one whose
main-checkout stamp is the one indexed (the index is not stale for it) and whose bytes, read
without following a link on either side, are the worktree's. Whatever else the worktree has is
indexed by the normal refresh (runner/core/search/index.py) at its first query, as a changed file would be.
Vectors and commits come along: a kept chunk's vector is the worktree's, and the commits are
reconciled with the worktree's own HEAD on the first query.
"""

import os
import sqlite3
import stat

from typing import Callable

from plugkit import confined
from runner.system import git as system_git
from runner.system.search.store import SCHEMA_VERSION, SqliteStore


def main_root(root: str) -> str | None:
    """The main checkout of the repository `root` is a linked worktree of, else None."""
    try:
        out = system_git.run_sync(root, "rev-parse", "--path-format=absolute", "--git-common-dir", timeout=10)
    except (OSError, system_git.GitTimeout):
        return None
    common = out.out.decode(errors="replace").strip()
    if out.rc != 0 or os.path.basename(common) != ".git":
        return None  # not a repository, or a bare one (no checkout to copy from)
    main = os.path.realpath(os.path.dirname(common))
    return main if main != os.path.realpath(root) else None


def _same(base: str, root: str, rel: str, size: int, max_bytes: int) -> bool:
    if size > max_bytes:
        return False  # skipped when indexed: the refresh records it again at no cost
    ours, theirs = confined.read_in(root, rel, size + 1), confined.read_in(base, rel, size + 1)
    return ours is not None and ours == theirs and len(ours) == size


def seed(root: str, base: str, base_db: str, db: str, listed: set[str], max_bytes: int,
         expand: Callable[[str], str]) -> int | None:
    """The index of `base` (at base_db), copied to db for the worktree `root` whose indexed files
    are `listed` (files bigger than max_bytes are never indexed); the files kept, or None when
    there is nothing to copy (no built index of the same schema)."""
    if not os.path.exists(base_db) or os.path.exists(db):
        return None
    try:
        src = sqlite3.connect(f"file:{base_db}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    tmp = db + ".seed"
    try:
        meta = dict(src.execute("SELECT key, value FROM meta WHERE key IN ('schema', 'built')").fetchall())
        if meta.get("schema") != SCHEMA_VERSION or not meta.get("built"):
            return None
        dst = sqlite3.connect(tmp)
        try:
            src.backup(dst)
        finally:
            dst.close()
    except sqlite3.Error:
        _unlink(tmp)
        return None
    finally:
        src.close()
    kept = 0
    store = SqliteStore(tmp, expand)
    try:
        with store.batch() as s:
            for rel, (mtime, size) in s.stamps().items():
                now = _stamp(root, rel) if rel in listed else None
                if now is not None and _stamp(base, rel) == (mtime, size) and now[1] == size \
                        and _same(base, root, rel, size, max_bytes):
                    s.restamp(rel, *now)
                    kept += 1
                else:
                    s.drop_file(rel)
            s.set_meta("seeded_from", base)
    except BaseException:
        store.close()
        _unlink(tmp)
        raise
    store.close()
    for suffix in ("-wal", "-shm"):
        _unlink(tmp + suffix)  # closed cleanly: checkpointed into the file
    os.replace(tmp, db)
    return kept


def _stamp(root: str, rel: str) -> tuple[float, int] | None:
    try:
        st = os.lstat(os.path.join(root, rel))
    except OSError:
        return None
    return (st.st_mtime, st.st_size) if stat.S_ISREG(st.st_mode) else None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
