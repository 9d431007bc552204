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

import contextlib
import json
import os
import sqlite3
import threading
from dataclasses import dataclass
from typing import Iterator, Optional

from plugkit.lifecycle import prd, signing
from runner.system.stores import gate_chain as chain

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
    # One row per work item (issue 31, part 2): an operation writes the items it changed, not
    # the whole list. body is the item's text inside .prd (plugkit.lifecycle.prd.render); the
    # items are their bodies in pos order (prd.join). workspace_items.items is '' then; it
    # holds the whole text only for a list whose text is not its bodies joined (a hand-made
    # .prd imported as it was), until the next write splits it.
    """CREATE TABLE IF NOT EXISTS item_rows (root TEXT NOT NULL, id TEXT NOT NULL, pos INTEGER NOT NULL,
        body TEXT NOT NULL, PRIMARY KEY (root, id)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS item_rows_pos ON item_rows (root, pos)",
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
    # Bumped by every write of the items: a reader that holds the items of this rev (parsed
    # or written by this process) needs neither their text nor the view's bytes again.
    rev: Optional[int] = None


class GateStore:
    def __init__(self, home: str) -> None:
        self.path = os.path.join(home, FILE)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        os.close(fd)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        for statement in _SCHEMA + chain.SCHEMA:
            self._conn.execute(statement)
        self.home = home
        self._signer: Optional[signing.Ed25519PrivateKey] = None
        self._marks: dict[str, tuple] = {}  # root -> (the chain's (phase, approvals), the chain's last seq then)
        self._audited: Optional[tuple] = None  # (data_version, chain.Walk, total_changes, result)
        with self._lock, self._write():
            if self._conn.execute("SELECT 1 FROM chain LIMIT 1").fetchone() is None:
                self._adopt()
        if "items_rev" not in {c[1] for c in self._conn.execute("PRAGMA table_info(workspaces)")}:
            self._conn.execute("ALTER TABLE workspaces ADD COLUMN items_rev INTEGER NOT NULL DEFAULT 0")

    def get(self, root: str, items: bool = True) -> Optional[Record]:
        """items=False: neither the items nor the view's bytes when they are exactly the items
        (items_view None, view_is_items True): what a state-only operation, or a reader
        holding the items of `rev`, needs."""
        with self._lock:
            row = self._conn.execute(
                "SELECT w.state, w.state_view, w.items_rev, coalesce(i.items, w.items), "
                "CASE WHEN i.root IS NULL THEN w.items_view WHEN i.view_same THEN NULL ELSE i.items_view END, "
                "CASE WHEN i.root IS NULL THEN w.items_view = CAST(w.items AS BLOB) ELSE i.view_same END "
                "FROM workspaces w LEFT JOIN workspace_items i ON i.root = w.root WHERE w.root = ?",
                (root,)).fetchone()
            if row is None:
                return None
            state, state_view, rev, whole, view, same = row
            text = None
            if items:
                text = whole if whole else prd.join([b for (b,) in self._conn.execute(
                    "SELECT body FROM item_rows WHERE root = ? ORDER BY pos", (root,))])
        if same:
            view = text.encode() if text is not None else None
        return Record(state, text, state_view, view, bool(same), rev)

    def put(self, root: str, record: Record, now: float) -> int:
        """The whole record: state, every item, both views' bytes. Returns the items' new rev."""
        bodies = _bodies(record.items)
        with self._lock, self._write():
            self._conn.execute("DELETE FROM item_rows WHERE root = ?", (root,))
            self._conn.executemany("INSERT INTO item_rows (root, id, pos, body) VALUES (?, ?, ?, ?)",
                                   [(root, i, n, b) for n, (i, b) in enumerate(bodies or ())])
            return self._put_rest(root, record.state, record.state_view, "" if bodies is not None else record.items,
                                  record.items, record.items_view, now)

    def put_items(self, root: str, state: str, state_view: Optional[bytes], items: str,
                  changed: list[tuple[str, str]], items_view: Optional[bytes], now: float) -> int:
        """Like put, writing only the item rows named in `changed` ((id, body), new ids last in
        their order): `items` is the whole text they make, for the view's comparison."""
        with self._lock, self._write():
            split = self._conn.execute("SELECT items = '' FROM workspace_items WHERE root = ?",
                                       (root,)).fetchone()
            if not split or not split[0]:  # the whole text is held: this write splits it
                bodies = _bodies(items)
                self._conn.execute("DELETE FROM item_rows WHERE root = ?", (root,))
                self._conn.executemany("INSERT INTO item_rows (root, id, pos, body) VALUES (?, ?, ?, ?)",
                                       [(root, i, n, b) for n, (i, b) in enumerate(bodies or ())])
                whole = "" if bodies is not None else items
            else:
                whole = ""
                for item_id, body in changed:
                    self._conn.execute(
                        "INSERT INTO item_rows (root, id, pos, body) VALUES (?, ?, (SELECT coalesce(max(pos) + 1, 0) "
                        "FROM item_rows WHERE root = ?), ?) ON CONFLICT (root, id) DO UPDATE SET body = excluded.body",
                        (root, item_id, root, body))
            return self._put_rest(root, state, state_view, whole, items, items_view, now)

    @contextlib.contextmanager
    def _write(self) -> Iterator[None]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise

    def _put_rest(self, root: str, state: str, state_view: Optional[bytes], whole: str, items: str,
                  items_view: Optional[bytes], now: float) -> int:
        self._conn.execute(
            "INSERT INTO workspaces (root, state, items, state_view, items_view, updated_at, items_rev) "
            "VALUES (?, ?, '', ?, NULL, ?, 1) ON CONFLICT (root) DO UPDATE SET state = excluded.state, "
            "items = '', state_view = excluded.state_view, items_view = NULL, "
            "updated_at = excluded.updated_at, items_rev = items_rev + 1",
            (root, state, state_view, now))
        self._note_state(root, state)
        same = items_view == items.encode()
        self._conn.execute(
            "INSERT INTO workspace_items (root, items, items_view, view_same) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (root) DO UPDATE SET items = excluded.items, items_view = excluded.items_view, "
            "view_same = excluded.view_same",
            (root, whole, None if same else items_view, int(same)))
        return self._conn.execute("SELECT items_rev FROM workspaces WHERE root = ?", (root,)).fetchone()[0]

    def put_state(self, root: str, state: str, state_view: Optional[bytes], now: float) -> bool:
        """The state and its view's bytes, the items' row left as it is (a change that touched
        no item writes none of them). False when the ledger holds no such workspace yet."""
        with self._lock, self._write():
            done = self._conn.execute(  # the items and items_rev stay: no item changed
                "UPDATE workspaces SET state = ?, state_view = ?, updated_at = ? WHERE root = ?",
                (state, state_view, now, root)).rowcount == 1
            if done:
                self._note_state(root, state)
            return done

    # --- the hash chain (runner.system.stores.gate_chain) ---------------------------------------------

    def _adopt(self) -> None:
        """A ledger written before the chain: its rows become the chain's first records."""
        rows = self._conn.execute("SELECT root, id, task_id, created_at FROM receipts ORDER BY created_at").fetchall()
        for root, rid, task_id, created_at in rows:
            chain.append(self._conn, "receipt", root, chain.receipt_body(rid, task_id, created_at))
        for root, held in self._conn.execute("SELECT root, held FROM configs").fetchall():
            chain.append(self._conn, "config", root, chain.config_body(held))
        for root, state in self._conn.execute("SELECT root, state FROM workspaces").fetchall():
            self._note_state(root, state)

    def _note_state(self, root: str, state: str) -> None:
        last = self._conn.execute("SELECT max(seq) FROM chain").fetchone()[0]
        cached = self._marks.get(root)
        marks = cached[0] if cached is not None and cached[1] == last else chain.marks_in_chain(self._conn, root)
        marks = chain.note_state(self._conn, root, state, marks)
        self._marks[root] = (marks, self._conn.execute("SELECT max(seq) FROM chain").fetchone()[0])

    def signer(self) -> signing.Ed25519PrivateKey:
        if self._signer is None:
            self._signer = signing.load_private(self.home)
        return self._signer

    def audit(self) -> tuple[list[chain.Break], int]:
        """Every break of the chain or of the tables it describes, and the records' count."""
        with self._lock:
            # data_version moves only on another connection's commit (sqlite3 on the file): then the
            # whole chain is read again; this store's own writes only append, so the walk resumes.
            version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            changes = self._conn.total_changes
            if self._audited is None or self._audited[0] != version:
                self._audited = (version, chain.Walk(), None, None)
            elif self._audited[2] == changes:
                return self._audited[3]
            walk = self._audited[1]
            walk.feed(self._conn)
            result = walk.result(self._conn, self.signer().public_key())
            self._audited = (version, walk, changes, result)
            return result

    def seal(self, why: str, now: float) -> Optional[int]:
        """The chain's head signed; its seq (None: an empty chain)."""
        with self._lock, self._write():
            return chain.seal(self._conn, self.signer(), why, now)

    def acknowledge(self, texts: list[str], by: dict, now: float) -> None:
        """A person saw these breaks: an `ack` record lists them, and the head is signed after it."""
        with self._lock, self._write():
            chain.append(self._conn, "ack", "", {"breaks": texts, "by": by, "at": now})
            chain.seal(self._conn, self.signer(), "acknowledged", now)

    def known(self, root: str) -> bool:
        """Whether the ledger holds the workspace (without reading its items: hooks ask this)."""
        with self._lock:
            return self._conn.execute("SELECT 1 FROM workspaces WHERE root = ?", (root,)).fetchone() is not None

    def add_receipt(self, root: str, receipt_id: str, task_id: Optional[int], now: float) -> None:
        with self._lock, self._write():
            if self._conn.execute("INSERT OR IGNORE INTO receipts (root, id, task_id, created_at) VALUES (?, ?, ?, ?)",
                                  (root, receipt_id, task_id, now)).rowcount == 1:
                chain.append(self._conn, "receipt", root, chain.receipt_body(receipt_id, task_id, now))

    def has_receipt(self, root: str, receipt_id: str) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM receipts WHERE root = ? AND id = ?",
                                      (root, receipt_id)).fetchone() is not None

    def config_held(self, root: str) -> Optional[str]:
        with self._lock:
            row = self._conn.execute("SELECT held FROM configs WHERE root = ?", (root,)).fetchone()
        return None if row is None else row[0]

    def hold_config(self, root: str, held: str, now: float) -> None:
        with self._lock, self._write():
            row = self._conn.execute("SELECT held FROM configs WHERE root = ?", (root,)).fetchone()
            if row is not None and row[0] == held:
                return  # nothing changed: no record
            self._conn.execute("INSERT INTO configs (root, held, updated_at) VALUES (?, ?, ?) ON CONFLICT (root) "
                               "DO UPDATE SET held = excluded.held, updated_at = excluded.updated_at",
                               (root, held, now))
            chain.append(self._conn, "config", root, chain.config_body(held))

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _bodies(items: str) -> Optional[list[tuple[str, str]]]:
    """(id, body) per item when `items` is exactly its items' bodies joined, as the runner
    writes it; None for any other text (kept whole)."""
    try:
        data = json.loads(items)
    except ValueError:
        return None
    if not isinstance(data, list) or not all(isinstance(i, dict) and isinstance(i.get("id"), str) for i in data):
        return None
    bodies = [(i["id"], "  " + json.dumps(i, indent=2, ensure_ascii=False).replace("\n", "\n  ")) for i in data]
    if len({i for i, _ in bodies}) != len(bodies) or prd.join([b for _, b in bodies]) != items:
        return None
    return bodies
