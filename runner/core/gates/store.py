"""The gates' ledger: each workspace's state and work items as the runner holds them, in sqlite
under $PLUGKIT_HOME (gates.sqlite3, 0600), the source of truth the workspace files are views of.

Per workspace root: the state and the items (JSON, as plugkit.lifecycle models them), and
the exact bytes the runner last wrote to each view, so an outside edit is the difference
between the view on disk and those bytes (plugkit.lifecycle.authority). Receipts the runner
sealed are listed too: a receipt stays verifiable after its task ages out of the task
ledger. The workspace's settings are held here too (`.plugkit/config.toml` is their view).
Synchronous and small: the lifecycle model calls it from worker threads, one
statement at a time under a lock.
"""

import os
import sqlite3
import threading
from dataclasses import dataclass
from typing import Optional

FILE = "gates.sqlite3"
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS workspaces (
        root TEXT PRIMARY KEY, state TEXT NOT NULL, items TEXT NOT NULL,
        state_view BLOB, items_view BLOB, updated_at REAL NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS receipts (
        root TEXT NOT NULL, id TEXT NOT NULL, task_id INTEGER, created_at REAL NOT NULL,
        PRIMARY KEY (root, id))""",
    # The items and the bytes last written to .prd, in a row of their own: SQLite rewrites a
    # whole row on any update, and a state-only change (every mutable, every stop) must not
    # rewrite a 1000-item .prd's worth of JSON (issue 31). Rows written before this table
    # keep their items in `workspaces` until their next items write moves them here.
    # view_same: the view's bytes are exactly the items (the usual case), kept once.
    """CREATE TABLE IF NOT EXISTS workspace_items (root TEXT PRIMARY KEY, items TEXT NOT NULL, items_view BLOB,
        view_same INTEGER NOT NULL DEFAULT 0)""",
    # The settings the runner holds for the workspace (plugkit.lifecycle.config_pin), JSON.
    """CREATE TABLE IF NOT EXISTS configs (root TEXT PRIMARY KEY, held TEXT NOT NULL, updated_at REAL NOT NULL)""",
)


@dataclass(frozen=True)
class Record:
    state: str
    items: Optional[str]  # None: not read (get(items=False))
    state_view: Optional[bytes]  # what the runner last wrote to .plugkit/state.json (None: nothing)
    items_view: Optional[bytes]  # ... and to .prd
    view_is_items: Optional[bool] = None  # items_view is exactly the items (None: not asked)


class GateStore:
    def __init__(self, home: str) -> None:
        self.path = os.path.join(home, FILE)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        os.close(fd)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        for statement in _SCHEMA:
            self._conn.execute(statement)

    def get(self, root: str, items: bool = True) -> Optional[Record]:
        """items=False: the items' text is not read, only the view's bytes and whether they are
        exactly the items: what a state-only operation needs to leave them alone."""
        with self._lock:
            row = self._conn.execute(
                f"SELECT w.state, {'coalesce(i.items, w.items)' if items else 'NULL'}, w.state_view, "
                "CASE WHEN i.root IS NULL THEN w.items_view WHEN i.view_same THEN "
                f"{'NULL' if items else 'CAST(i.items AS BLOB)'} ELSE i.items_view END, "
                "CASE WHEN i.root IS NULL THEN w.items_view = CAST(w.items AS BLOB) ELSE i.view_same END "
                "FROM workspaces w LEFT JOIN workspace_items i ON i.root = w.root WHERE w.root = ?",
                (root,)).fetchone()
        if row is None:
            return None
        view = row[1].encode() if items and row[4] and row[1] is not None else row[3]  # the same bytes, not sent twice
        return Record(row[0], row[1], row[2], view, bool(row[4]))

    def put(self, root: str, record: Record, now: float) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(
                    "INSERT INTO workspaces (root, state, items, state_view, items_view, updated_at) "
                    "VALUES (?, ?, '', ?, NULL, ?) ON CONFLICT (root) DO UPDATE SET state = excluded.state, "
                    "items = '', state_view = excluded.state_view, items_view = NULL, "
                    "updated_at = excluded.updated_at",
                    (root, record.state, record.state_view, now))
                same = record.items is not None and record.items_view == record.items.encode()
                self._conn.execute(
                    "INSERT INTO workspace_items (root, items, items_view, view_same) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (root) DO UPDATE SET items = excluded.items, items_view = excluded.items_view, "
                    "view_same = excluded.view_same",
                    (root, record.items, None if same else record.items_view, int(same)))
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def put_state(self, root: str, state: str, state_view: Optional[bytes], now: float) -> bool:
        """The state and its view's bytes, the items' row left as it is (a change that touched
        no item writes none of them). False when the ledger holds no such workspace yet."""
        with self._lock:
            return self._conn.execute(
                "UPDATE workspaces SET state = ?, state_view = ?, updated_at = ? WHERE root = ?",
                (state, state_view, now, root)).rowcount == 1

    def known(self, root: str) -> bool:
        """Whether the ledger holds the workspace (without reading its items: hooks ask this)."""
        with self._lock:
            return self._conn.execute("SELECT 1 FROM workspaces WHERE root = ?", (root,)).fetchone() is not None

    def add_receipt(self, root: str, receipt_id: str, task_id: Optional[int], now: float) -> None:
        with self._lock:
            self._conn.execute("INSERT OR IGNORE INTO receipts (root, id, task_id, created_at) VALUES (?, ?, ?, ?)",
                               (root, receipt_id, task_id, now))

    def has_receipt(self, root: str, receipt_id: str) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM receipts WHERE root = ? AND id = ?",
                                      (root, receipt_id)).fetchone() is not None

    def config_held(self, root: str) -> Optional[str]:
        with self._lock:
            row = self._conn.execute("SELECT held FROM configs WHERE root = ?", (root,)).fetchone()
        return None if row is None else row[0]

    def hold_config(self, root: str, held: str, now: float) -> None:
        with self._lock:
            self._conn.execute("INSERT INTO configs (root, held, updated_at) VALUES (?, ?, ?) ON CONFLICT (root) "
                               "DO UPDATE SET held = excluded.held, updated_at = excluded.updated_at",
                               (root, held, now))

    def close(self) -> None:
        with self._lock:
            self._conn.close()
