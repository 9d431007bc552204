"""ThreadEngine: the one SearchEngine (runner/core/search/store.py) the runner runs, handing the
index its SQLite stores, its locks and daemon threads. Daemon threads, because a read that never
returns (a hung network or FUSE mount under a workspace) must hold neither a query nor the
runner's stop: the index joins them with a timeout and answers from what it has."""

import threading
from typing import Any, Callable

from runner.system.search import seed as seed_mod
from runner.system.search.store import SqliteStore


class ThreadJob:
    def __init__(self, name: str, target: Callable[..., None], args: tuple) -> None:
        self._thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._thread.start()

    def alive(self) -> bool:
        return self._thread.is_alive()

    def join(self, seconds: float | None) -> None:
        self._thread.join(seconds)


class ThreadEngine:
    def __init__(self, expand: Callable[[str], str], max_bytes: int) -> None:
        """expand: what the index tokenizes of a text; max_bytes: files above it are never indexed."""
        self._expand = expand
        self._max_bytes = max_bytes

    def open_store(self, path: str) -> SqliteStore:
        return SqliteStore(path, self._expand)

    def start(self, name: str, target: Callable[..., None], *args: Any) -> ThreadJob:
        return ThreadJob(name, target, args)

    def lock(self) -> threading.Lock:
        return threading.Lock()

    def flag(self) -> threading.Event:
        return threading.Event()

    def main_root(self, root: str) -> str | None:
        return seed_mod.main_root(root)

    def seed(self, root: str, base: str, base_db: str, db: str, listed: set[str]) -> int | None:
        return seed_mod.seed(root, base, base_db, db, listed, self._max_bytes, self._expand)
