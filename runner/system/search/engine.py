"""ThreadEngine: the one SearchEngine (runner/core/search/store.py) the runner runs, handing the
index its SQLite stores (a worktree's an overlay over its repository's, overlay.py), its locks and
daemon threads. Daemon threads, because a read that never
returns (a hung network or FUSE mount under a workspace) must hold neither a query nor the
runner's stop: the index joins them with a timeout and answers from what it has."""

import threading
from typing import Any, Callable

import os
import sqlite3
import urllib.parse

from runner.system import git as system_git
from runner.system.search.overlay import OverlayStore
from runner.system.search.store import SCHEMA_VERSION, SqliteStore


class ThreadJob:
    def __init__(self, name: str, target: Callable[..., None], args: tuple) -> None:
        self._thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._thread.start()

    def alive(self) -> bool:
        return self._thread.is_alive()

    def join(self, seconds: float | None) -> None:
        self._thread.join(seconds)


class ThreadEngine:
    def __init__(self, expand: Callable[[str], str], watch: Callable[[str, frozenset[str]], Any] | None = None) -> None:
        """expand: what the index tokenizes of a text (core's tokens.expand); watch: what tells a
        workspace's changed files (runner/system/dirwatch.py), None to stat every file each query."""
        self._expand = expand
        self._watch = watch

    def open_store(self, path: str, base: str | None = None) -> SqliteStore:
        """A worktree's store is an overlay over its repository's index once that one is built;
        until then it is an index of its own, as any workspace's."""
        if base is not None and self.built(base):
            try:
                return OverlayStore(path, base, self._expand)
            except (sqlite3.Error, ValueError):
                pass  # the base went or changed schema meanwhile: an index of its own
        return SqliteStore(path, self._expand)

    def start(self, name: str, target: Callable[..., None], *args: Any) -> ThreadJob:
        return ThreadJob(name, target, args)

    def lock(self) -> threading.Lock:
        return threading.Lock()

    def flag(self) -> threading.Event:
        return threading.Event()

    def built(self, path: str) -> bool:
        return _built(path)

    def watch(self, root: str, skip: frozenset[str]):
        return self._watch(root, skip) if self._watch is not None else None

    def main_root(self, root: str) -> str | None:
        """The main checkout of the repository `root` is a linked worktree of, else None."""
        try:
            out = system_git.run_sync(root, "rev-parse", "--path-format=absolute", "--git-common-dir", timeout=10)
        except (OSError, system_git.GitTimeout):
            return None
        common = out.out.decode(errors="replace").strip()
        if out.rc != 0 or os.path.basename(common) != ".git":
            return None  # not a repository, or a bare one (no checkout to share an index with)
        main = os.path.realpath(os.path.dirname(common))
        return main if main != os.path.realpath(root) else None


def _built(db: str) -> bool:
    """The index at db is complete, of this schema: a worktree may answer from it."""
    if not os.path.exists(db):
        return False
    try:
        with sqlite3.connect("file:" + urllib.parse.quote(db) + "?mode=ro", uri=True) as con:
            meta = dict(con.execute("SELECT key, value FROM meta WHERE key IN ('schema', 'built')").fetchall())
    except sqlite3.Error:
        return False
    return meta.get("schema") == SCHEMA_VERSION and bool(meta.get("built"))
