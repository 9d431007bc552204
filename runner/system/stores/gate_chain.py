"""The gate store's hash chain: receipts, approvals, settings confirmations and phase moves, each
a record carrying its predecessor's hash, so an edit, a removal or a reordering made to the
ledger outside the runner (sqlite3 on gates.sqlite3) is found and named by its record.

A record's hash covers its seq, kind, workspace, body and predecessor's hash. The head is
signed with the runner's Ed25519 key (plugkit.lifecycle.signing) on demand (`plugkit audit
verify`), on a person's acknowledgement and when the runner stops: removing records after the
last signed head is the one edit the chain alone cannot show. Besides the chain itself, the
tables it describes are compared with it: a receipts row, a held setting, a phase or an
approval that no record accounts for was written around the runner.

A break stays a finding (gate status: tampered; VERIFY -> COMPLETE waits) until a person at
their own terminal acknowledges it (`plugkit audit ack`): an `ack` record naming the break.
Callers hold the store's lock; append runs inside their transaction.
"""

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from typing import Any, Optional

from plugkit.lifecycle import signing

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS chain (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, root TEXT NOT NULL,
        body TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS chain_root ON chain (root, kind)",
    """CREATE TABLE IF NOT EXISTS chain_seals (n INTEGER PRIMARY KEY AUTOINCREMENT, seq INTEGER NOT NULL,
        head TEXT NOT NULL, why TEXT NOT NULL, at REAL NOT NULL, sig TEXT NOT NULL)""",
)
GENESIS = "0" * 64
HOW_TO_ACK = "look, then `plugkit audit ack` from your own terminal"


@dataclass(frozen=True)
class Break:
    seq: int  # the record it names; one past the chain's end for a table row no record accounts for
    text: str  # also its identity: an `ack` record lists the texts a person acknowledged
    acknowledged: bool = False


def _dumps(body: Any) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def record_hash(seq: int, kind: str, root: str, body: str, prev: str) -> str:
    return hashlib.sha256(_dumps([seq, kind, root, body, prev]).encode()).hexdigest()


def append(conn: sqlite3.Connection, kind: str, root: str, body: dict) -> int:
    last = conn.execute("SELECT seq, hash FROM chain ORDER BY seq DESC LIMIT 1").fetchone()
    seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS)
    text = _dumps(body)
    conn.execute("INSERT INTO chain (seq, kind, root, body, prev, hash) VALUES (?, ?, ?, ?, ?, ?)",
                 (seq, kind, root, text, prev, record_hash(seq, kind, root, text, prev)))
    return seq


def receipt_body(receipt_id: str, task_id: Optional[int], created_at: float) -> dict:
    return {"id": receipt_id, "task_id": task_id, "created_at": created_at}


def config_body(held: str) -> dict:
    return {"sha256": hashlib.sha256(held.encode()).hexdigest()}


def state_marks(state_json: str) -> tuple[Optional[str], dict[str, float]]:
    """(phase, {approved item: when}) of a state as the ledger holds it."""
    try:
        data = json.loads(state_json)
    except ValueError:
        return None, {}
    approvals = data.get("approvals") or {}
    return data.get("phase"), {k: v.get("at") for k, v in approvals.items() if isinstance(v, dict)}


def marks_in_chain(conn: sqlite3.Connection, root: str) -> tuple[Optional[str], dict[str, float]]:
    """The phase and approvals the chain says the workspace has now."""
    phase, approvals = None, {}
    for kind, body in conn.execute("SELECT kind, body FROM chain WHERE root = ? AND kind IN "
                                   "('phase', 'approval', 'approval_dropped') ORDER BY seq", (root,)):
        data = json.loads(body)
        if kind == "phase":
            phase = data.get("phase")
        elif kind == "approval":
            approvals[data.get("item")] = data.get("at")
        else:
            approvals.pop(data.get("item"), None)
    return phase, approvals


def note_state(conn: sqlite3.Connection, root: str, state_json: str, before: tuple) -> tuple:
    """Records for what the state changed of `before` (the chain's marks); the marks after."""
    phase, approvals = state_marks(state_json)
    if phase is not None and phase != before[0]:
        append(conn, "phase", root, {"phase": phase})
    for item, at in approvals.items():
        if before[1].get(item) != at:
            append(conn, "approval", root, {"item": item, "at": at})
    for item in before[1]:
        if item not in approvals:
            append(conn, "approval_dropped", root, {"item": item})
    return (phase if phase is not None else before[0]), approvals


class Walk:
    """The chain read so far: resumable, since the runner only ever appends to it. A store that
    saw no other connection write since (PRAGMA data_version) reads only the new records."""

    def __init__(self) -> None:
        self.breaks: list[Break] = []
        self.acked: set[str] = set()
        self.prev_seq, self.prev_hash, self.count = 0, GENESIS, 0
        self.receipts: set[tuple] = set()
        self.configs: dict[str, str] = {}
        self.rows: Optional[list[Break]] = None  # the receipts and settings rows no record accounts for

    def feed(self, conn: sqlite3.Connection) -> None:
        for seq, kind, root, body, prev, stored in conn.execute(
                "SELECT seq, kind, root, body, prev, hash FROM chain WHERE seq > ? ORDER BY seq", (self.prev_seq,)):
            self._one(seq, kind, root, body, prev, stored)

    def _one(self, seq: int, kind: str, root: str, body: str, prev: str, stored: str) -> None:
        self.count += 1
        if record_hash(seq, kind, root, body, prev) != stored:
            self.breaks.append(Break(seq, f"ledger record {seq} ({kind}, {root}) was edited after it was written"))
        elif seq != self.prev_seq + 1 or prev != self.prev_hash:
            gone = f"records {self.prev_seq + 1}..{seq - 1} were removed" if seq > self.prev_seq + 1 else \
                "the record before it was removed, replaced or moved"
            self.breaks.append(Break(seq, f"ledger record {seq} ({kind}, {root}) no longer follows its "
                                          f"predecessor: {gone}"))
        self.prev_seq, self.prev_hash = seq, stored
        try:
            data = json.loads(body)
        except ValueError:
            return
        if kind == "receipt":
            self.receipts.add((root, data.get("id"), data.get("task_id"), data.get("created_at")))
        elif kind == "config":
            self.configs[root] = data.get("sha256")
        elif kind == "ack":
            self.acked.update(s for s in data.get("breaks", []) if isinstance(s, str))

    def result(self, conn: sqlite3.Connection,
               public_key: Optional[signing.Ed25519PublicKey]) -> tuple[list[Break], int]:
        """Every break, first first (the chain's own, then its signed head, then the tables), and the count."""
        if self.rows is None:  # once per full read: this store's own writes keep those rows and records in step
            self.rows = _rows(conn, self.receipts, self.configs, self.prev_seq)
        found = self.breaks + _seals(conn, self.prev_seq, public_key) + self.rows + _workspaces(conn, self.prev_seq)
        return [Break(b.seq, b.text, b.text in self.acked) for b in found], self.count


def walk(conn: sqlite3.Connection, public_key: Optional[signing.Ed25519PublicKey]) -> tuple[list[Break], int]:
    done = Walk()
    done.feed(conn)
    return done.result(conn, public_key)


def _seals(conn: sqlite3.Connection, last: int, public_key: Optional[signing.Ed25519PublicKey]) -> list[Break]:
    row = conn.execute("SELECT seq, head, sig FROM chain_seals ORDER BY n DESC LIMIT 1").fetchone()
    if row is None or public_key is None:
        return []
    seq, head, sig = row
    if not signing.signed_by(public_key, f"chain:{seq}:{head}".encode(), sig):
        return [Break(last + 1, "the ledger's signed head does not verify: the signature was edited")]
    held = conn.execute("SELECT hash FROM chain WHERE seq = ?", (seq,)).fetchone()
    if held is None or held[0] != head:
        return [Break(seq, f"ledger record {seq} is not the one whose hash was signed as head "
                           "(records at or before it were removed or rewritten)")]
    return []


def _rows(conn: sqlite3.Connection, receipts: set, configs: dict, last: int) -> list[Break]:
    """Rows the chain does not account for; seq `last + 1` names "after the chain's end"."""
    found = []
    for root, rid, task_id, created_at in conn.execute("SELECT root, id, task_id, created_at FROM receipts"):
        if (root, rid, task_id, created_at) not in receipts:
            found.append(Break(last + 1, f"receipts row {rid} of {root} matches no ledger record "
                                         "(added or edited outside the runner)"))
    present = {(r, i) for r, i, *_ in conn.execute("SELECT root, id FROM receipts")}
    for root, rid, _, _ in sorted(receipts, key=lambda r: (r[0], r[1] or "")):
        if (root, rid) not in present:
            found.append(Break(last + 1, f"receipt {rid} of {root} is in the ledger's chain but its row was removed"))
    for root, held in conn.execute("SELECT root, held FROM configs"):
        if configs.get(root) != config_body(held)["sha256"]:
            found.append(Break(last + 1, f"the settings held for {root} are not the ones last confirmed in the ledger"))
    return found


def _workspaces(conn: sqlite3.Connection, last: int) -> list[Break]:
    """Phases and approvals the chain does not account for (a row per workspace: read every time)."""
    found = []
    for root, state in conn.execute("SELECT root, state FROM workspaces"):
        phase, approvals = state_marks(state)
        chain_phase, chain_approvals = marks_in_chain(conn, root)
        if chain_phase is not None and phase != chain_phase:
            found.append(Break(last + 1, f"the phase held for {root} ({phase}) is not the ledger's last move "
                                         f"({chain_phase})"))
        for item, at in approvals.items():
            if chain_approvals.get(item) != at:
                found.append(Break(last + 1, f"the approval of {item} in {root} matches no ledger record"))
    return found


def seal(conn: sqlite3.Connection, key: signing.Ed25519PrivateKey, why: str, now: float) -> Optional[int]:
    row = conn.execute("SELECT seq, hash FROM chain ORDER BY seq DESC LIMIT 1").fetchone()
    if row is None:
        return None
    conn.execute("INSERT INTO chain_seals (seq, head, why, at, sig) VALUES (?, ?, ?, ?, ?)",
                 (row[0], row[1], why, now, signing.sign(key, f"chain:{row[0]}:{row[1]}".encode())))
    return row[0]
