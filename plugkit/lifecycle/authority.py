"""The runner's ledger as the source of truth, and the workspace files as views of it.

With a ledger (`ws.ledger`, the runner's), a workspace's state and work items are read
from and written to the ledger; `.plugkit/state.json` and `.prd` are views the runner
writes after each change. The ledger also keeps the exact bytes it last wrote to each
view, so an edit made outside plugkit is the difference between a view on disk and those
bytes, field by field (a `Finding`). A finding is never taken as true (decisions read
the ledger) and it holds until the view agrees again: the field edited back by hand, or
the same change made through plugkit (the ledger then says what the view says), or
`gate restore` rewriting the views. While a view has findings the runner does not
overwrite it: the edit stays where a person can see it.

One edit is not tampering: a new work item added to `.prd` by hand as pending (or
blocked), naming no evidence, is a proposal; it is adopted into the ledger by the next
write, and read as an open item until then.

A workspace the ledger has never seen is imported once from its files: `.prd` items as
they are, except that an item the rules of a move would not let hold its status comes in
as pending (a critical item under way or done, since no approval is imported; a completed
item without a sealed receipt of its check run green); `.plugkit/state.json` is not imported (phase, mutables and
approvals count only when the runner saw them happen) and a notice says so.
"""

import json
import os
import time
from dataclasses import dataclass, replace
from typing import Any, Optional

from plugkit import confined
from plugkit.lifecycle import config, config_pin, evidence, item_states, items_view, prd
from plugkit.lifecycle.errors import Conflict, GateError
from plugkit.lifecycle.model import State
from plugkit.lifecycle.workspace import Workspace, atomic_write as _atomic_write

STATE_VIEW = ".plugkit/state.json"
ITEMS_VIEW = ".prd"
# Bookkeeping only the runner changes and that makes no claim: never a finding.
UNCLAIMED = frozenset({"version", "notices", "last_stop_reason"})
PROPOSABLE = frozenset({"pending", "blocked"})


@dataclass(frozen=True)
class Record:
    state: str  # State JSON
    items: str  # .prd JSON
    state_view: Optional[bytes]  # what the runner last wrote to .plugkit/state.json (None: nothing)
    items_view: Optional[bytes]  # ... and to .prd


@dataclass(frozen=True)
class Finding:
    file: str
    field: str
    view: Any
    runner: Any

    def text(self) -> str:
        return f"{self.file}: {self.field} says {_short(self.view)}, the runner holds {_short(self.runner)}"


@dataclass
class Snapshot:
    state: State
    items: Optional[list[prd.Item]]  # the ledger's, plus proposals not adopted yet (None: not asked for)
    findings: list[Finding]
    proposed: list[str]
    record: Record


def atomic_write(path: str, data: bytes) -> None:
    """A view's write: whole or not at all, without an fsync (the ledger holds the truth; a
    300 KB .prd fsynced on every change was most of an operation's cost at 1000 items)."""
    _atomic_write(path, data, durable=False)


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 60 else text[:59] + "…"


def _read(root: str, path: str, empty_is_none: bool = True) -> Optional[bytes]:
    """A view's bytes; None when it is missing or empty, which claims nothing (an empty view
    is also what a power loss can leave of one written without an fsync): the next change
    writes it again."""
    try:
        with confined.open_beneath(root, path) as fh:  # never through a link, never a FIFO
            return fh.read() or (None if empty_is_none else b"")
    except FileNotFoundError:
        return None


def render_state(st: State) -> bytes:
    return st.model_dump_json(indent=1).encode()


# --- first contact ---------------------------------------------------------------------------

def _bootstrap(ws: Workspace) -> Record:
    st = State()
    state_bytes, items_bytes = _read(ws.root, ws.state_path, False), _read(ws.root, ws.prd_path, False)  # a person's files, as they are
    if state_bytes is not None:
        st.notice("state.json predates the runner's ledger and was not imported: the gates start from PLAN "
                  "(phase, mutables and approvals count only when the runner saw them happen)")
    items = prd.parse(items_bytes) if items_bytes is not None else []  # unreadable: Conflict, as before
    site = _site(ws)
    for item in items:
        why = _not_admitted(ws, item, st, site)
        if why:
            item.status = "pending"
            st.notice(f"{item.id} {why}: pending until it is moved on through plugkit")
    return Record(st.model_dump_json(), prd.dump(items).decode(), state_bytes, items_bytes)


def _site(ws: Workspace) -> item_states.Site:
    """HEAD is not asked about on import: the work may have been done commits ago."""
    cfg = config.load(ws.config_path)
    return item_states.Site(verify=cfg.verify, lang=cfg.verify_lang)


def _not_admitted(ws: Workspace, item: prd.Item, st: State, site: item_states.Site) -> str:
    """Why an imported item cannot keep the status its file gives it ("" when it can): the
    same rules as a move through plugkit, as no approval is imported (approvals are not)."""
    try:
        item_states.admit(item, st)
    except GateError:
        return "is critical-risk and no person approved it here"
    if item.status != "completed":
        return ""
    try:
        receipts = [evidence.find(ws, x) for x in item.evidence]
    except GateError:
        receipts = []
    if not receipts or any(evidence.verify(ws, r, r.id) for r in receipts):
        return "was marked completed in .prd without receipts this runner sealed"
    try:
        item_states.require_proof(item, receipts, site)
    except GateError:
        return "was marked completed in .prd without a receipt of its check run green by this runner"
    return ""


# --- comparing views with what the runner wrote ---------------------------------------------

def _flat(data: dict, prefix: str = "", depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if depth == 0 and key in UNCLAIMED:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict) and depth < 2:
            out.update(_flat(value, name + ".", depth + 1))
        else:
            out[name] = value
    return out


def _state_findings(last: Optional[bytes], now: Optional[bytes], st: State) -> list[Finding]:
    if now is None or now == last:
        return []  # a deleted view claims nothing: it is written again with the next change
    try:
        seen = _flat(State.model_validate_json(now).model_dump(mode="json"))
    except ValueError:
        return [Finding(STATE_VIEW, "(the file)", "unreadable", "valid JSON")]
    try:
        before = _flat(State.model_validate_json(last).model_dump(mode="json")) if last else {}
    except ValueError:
        before = {}
    held = _flat(st.model_dump(mode="json"))
    return [Finding(STATE_VIEW, key, seen.get(key), held.get(key))
            for key in sorted(set(seen) | set(before))
            if seen.get(key) != before.get(key) and seen.get(key) != held.get(key)]


def _raw_items(data: Optional[bytes]) -> Optional[dict[str, dict]]:
    if data is None:
        return None
    try:
        items = json.loads(data)
        if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("id"), str)
                                                  for i in items):
            return None
        return {i["id"]: i for i in items}
    except ValueError:
        return None


def _items_findings(last: Optional[bytes], now: Optional[bytes],
                    items: list[prd.Item]) -> tuple[list[Finding], list[prd.Item]]:
    if now is None or now == last:
        return [], []
    seen = _raw_items(now)
    if seen is None:
        return [Finding(ITEMS_VIEW, "(the file)", "unreadable", "a JSON array of work items")], []
    before = _raw_items(last) or {}
    held = {i.id: i.model_dump(mode="json") for i in items}
    findings: list[Finding] = []
    proposals: list[prd.Item] = []
    for item_id in sorted(set(seen) | set(before)):
        mine, was, theirs = held.get(item_id), before.get(item_id), seen.get(item_id)
        if theirs is None:
            if mine is not None:
                findings.append(Finding(ITEMS_VIEW, f"item {item_id}", "removed", mine.get("status")))
            continue
        if mine is None:
            proposal = _proposal(theirs)
            if proposal is not None:
                proposals.append(proposal)
            else:
                findings.append(Finding(ITEMS_VIEW, f"item {item_id}", f"added as {theirs.get('status')}",
                                        "no such item"))
            continue
        for key in sorted(set(theirs) | set(was or {})):
            if theirs.get(key) != (was or {}).get(key) and theirs.get(key) != mine.get(key):
                findings.append(Finding(ITEMS_VIEW, f"item {item_id} {key}", theirs.get(key), mine.get(key)))
    return findings, proposals


def _proposal(raw: dict) -> Optional[prd.Item]:
    if raw.get("status", "pending") not in PROPOSABLE or raw.get("evidence"):
        return None
    try:
        return prd.Item.model_validate(raw)
    except ValueError:
        return None


# --- reading and writing through the ledger ----------------------------------------------------

def load(ws: Workspace, items: bool = True) -> Snapshot:
    """The ledger's state and items, the views' findings and proposals. Writes nothing.
    With items=False the items are left unread while `.prd` is what the runner last wrote
    (nothing there to find or adopt): state-only operations and the hooks pay for the state only."""
    rec = _with_view(ws, ws.ledger.get(ws.root, items=False) or _bootstrap(ws))
    st = State.model_validate_json(rec.state)
    findings = _state_findings(rec.state_view, _read(ws.root, ws.state_path), st)
    on_disk = _read(ws.root, ws.prd_path)
    if not items and (on_disk is None or on_disk == rec.items_view):
        return Snapshot(st, None, findings, [], rec)
    rec, its = _items_of(ws, rec)
    if on_disk == rec.items_view:  # the usual case: nothing to find or adopt
        return Snapshot(st, its, findings, [], rec)
    item_findings, proposals = _items_findings(rec.items_view, on_disk, its)
    known = {i.id for i in its}
    proposals = [p for p in proposals if p.id not in known]
    if proposals:
        its = its + proposals
        prd.relink(its, prd.edges_of(its))
    return Snapshot(st, its, findings + item_findings, [p.id for p in proposals], rec)


def _with_view(ws: Workspace, rec: Any) -> Any:
    """The record with the view's bytes: a ledger leaves them out when they are exactly the
    items, which this process holds when it parsed or wrote that rev (else they are read)."""
    if rec.items_view is not None or not getattr(rec, "view_is_items", False) or rec.items is not None:
        return rec
    data = items_view.view_at(ws, getattr(rec, "rev", None))
    return replace(rec, items_view=data) if data is not None else ws.ledger.get(ws.root)


def _items_of(ws: Workspace, rec: Any) -> tuple[Any, list[prd.Item]]:
    """The record's items, from the versions this process holds when it has that rev (their
    text is not read then), else read and parsed."""
    its = items_view.items_at(ws, getattr(rec, "rev", None))
    if its is not None:
        return rec, its
    if rec.items is None:
        rec = ws.ledger.get(ws.root)
    return rec, items_view.items(ws, rec.items, getattr(rec, "rev", None))


@dataclass(frozen=True)
class ConfigFinding(Finding):
    """A setting the file weakens (or changes past what the table ranks): only a person takes it."""

    def text(self) -> str:
        return f"{super().text()} (only a person: `{config_pin.CONFIRM}`)"


class LedgerFinding(Finding):
    """A break of the runner's own ledger (runner.system.stores.gate_chain), not yet acknowledged by a person."""

    def text(self) -> str:
        return f"{self.view} ({self.runner})"


def findings(ws: Workspace) -> list[Finding]:
    """Every view's outside edits (state.json, .prd, the settings in config.toml) and every
    unacknowledged break of the ledger's hash chain."""
    if ws.ledger is None:
        return []
    settings: list[Finding] = [ConfigFinding(config_pin.VIEW, d.key, d.view, d.held) for d in config_pin.drift(ws)]
    audit = getattr(ws.ledger, "audit", None)
    if audit is not None:
        settings += [LedgerFinding("gates.sqlite3", "ledger", b.text, "look, then `plugkit audit ack` from your "
                                   "own terminal") for b in audit()[0] if not b.acknowledged]
    try:
        return load(ws, items=False).findings + settings  # an unchanged .prd holds none
    except Conflict:
        return settings


def commit(ws: Workspace, state: Optional[State] = None, items: Optional[list[prd.Item]] = None,
           changed: Optional[dict[str, prd.Item]] = None) -> None:
    """Call with the workspace lock held. Stores the change, then writes each view that has
    no findings (a view someone edited is left as it is, for them to see). Only what changed
    is rendered and stored: the items' text is reused when no item changed (items=None), and
    per item otherwise (plugkit.lifecycle.items_view; `changed`, the items the caller changed by id,
    spares comparing the others, and the ledger writes only their rows)."""
    rec = _with_view(ws, ws.ledger.get(ws.root, items=False) or _bootstrap(ws))
    st = state if state is not None else State.model_validate_json(rec.state)
    state_view = rec.state_view
    on_disk = _read(ws.root, ws.state_path)
    if not _state_findings(rec.state_view, on_disk, st) and (state is not None or on_disk is not None):
        data = render_state(st)
        if on_disk != data:
            ws.ensure_dir()
            atomic_write(ws.state_path, data)
        state_view = data
    on_disk = _read(ws.root, ws.prd_path)
    if items is None and on_disk is not None and on_disk == rec.items_view and _view_is_items(rec):
        # The common case of a state-only change: .prd is the ledger's items, nothing to read or write.
        if ws.ledger.put_state(ws.root, st.model_dump_json(), state_view, time.time()):
            return
    if rec.items is None and (items is None or not items_view.holds(ws, getattr(rec, "rev", None))):
        rec = ws.ledger.get(ws.root)  # the items' text is needed (this process does not hold that rev)
    items_view_bytes = rec.items_view
    if items is None and (on_disk is None or on_disk == rec.items_view):
        # No item changed and the view holds no outside edit: it is the ledger's text again
        # (rewritten only if it was deleted, or left behind while it had findings).
        data = rec.items.encode()
        if rec.items.strip() != "[]" or on_disk is not None:
            if on_disk != data:
                atomic_write(ws.prd_path, data)
            items_view_bytes = data
        if items_view_bytes == rec.items_view and ws.ledger.put_state(ws.root, st.model_dump_json(), state_view,
                                                                       time.time()):
            return
    rev = getattr(rec, "rev", None)
    its = items if items is not None else _items_of(ws, rec)[1]
    text = items_view.dump(ws, rec.items, its, changed if items is not None else None, rev)
    if on_disk == rec.items_view:
        found, proposals = [], []  # the view is what the runner wrote: nothing to find
    else:
        found, proposals = _items_findings(rec.items_view, on_disk, its)
    if not found and not [p for p in proposals if p.id not in {i.id for i in its}] and (its or on_disk is not None):
        data = text.encode()
        if on_disk != data:
            atomic_write(ws.prd_path, data)
        items_view_bytes = data
    rows = items_view.written(ws, text)
    if rows is not None and rev is not None and hasattr(ws.ledger, "put_items"):
        rev = ws.ledger.put_items(ws.root, st.model_dump_json(), state_view, text, rows, items_view_bytes,
                                  time.time())
    else:
        rev = ws.ledger.put(ws.root, Record(st.model_dump_json(), text, state_view, items_view_bytes), time.time())
    items_view.stamp(ws, text, rev)


def _view_is_items(rec: Any) -> bool:
    known = getattr(rec, "view_is_items", None)  # a store that did not compare them: compare here
    return known if known is not None else rec.items is not None and rec.items_view == rec.items.encode()


def restore(ws: Workspace) -> list[Finding]:
    """Call with the workspace lock held: the views written again from the ledger, outside
    edits dropped (proposals included: add them through plugkit). Returns what was dropped."""
    snap = load(ws)
    st = snap.state
    items = [i for i in snap.items if i.id not in snap.proposed]
    if snap.findings or snap.proposed:
        st.notice(f"views restored from the runner's ledger at {time.strftime('%H:%M:%S')}: "
                  f"{len(snap.findings)} outside edit(s) and {len(snap.proposed)} proposal(s) dropped")
    ws.ensure_dir()
    atomic_write(ws.state_path, render_state(st))
    state_view = render_state(st)
    items_view = snap.record.items_view
    if items or os.path.exists(ws.prd_path):
        items_view = prd.dump(items)
        atomic_write(ws.prd_path, items_view)
    ws.ledger.put(ws.root, Record(st.model_dump_json(), prd.dump(items).decode(), state_view, items_view),
                  time.time())
    return snap.findings
