"""Work items, evidence and approvals as operations on one workspace (synchronous, file-based).

Every write holds the workspace lock for the whole read-modify-write of `.prd` and
state.json, so two agents updating items at once cannot lose one another's change.
The rules a person relies on live here: completing an item names receipts that still
verify; a critical item starts (or stops being critical) only after a person approved it.
"""

from dataclasses import dataclass
from typing import Any, Optional

from pydantic import ValidationError

from plugkit.lifecycle import authority, evidence, gating, prd, state as state_mod
from plugkit.lifecycle.errors import Conflict, Forbidden, Invalid
from plugkit.lifecycle.state import Approval, State, Transition
from plugkit.lifecycle.workspace import Workspace, atomic_write

SCALAR_FIELDS = ("subject", "acceptance", "edge_cases", "effort", "risk", "verify")


def _save_items(ws: Workspace, items: list[prd.Item]) -> None:
    if ws.ledger is not None:
        authority.commit(ws, items=items)  # the ledger first; .prd is its view
        return
    atomic_write(ws.prd_path, prd.dump(items))


def _validated(data: dict[str, Any]) -> prd.Item:
    try:
        return prd.Item.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise Invalid(f"work item {where}: {first['msg']}") from None


def _check_start(items: list[prd.Item], item: prd.Item, st: State) -> None:
    waiting = prd.unfinished_blockers(items, item)
    if waiting:
        raise Conflict(f"{item.id} is blocked by unfinished {', '.join(waiting)}")
    if item.risk == "critical" and item.id not in st.approvals:
        raise Forbidden(f"{item.id} is critical-risk: a person must approve it first "
                        f"(the user runs `plugkit approve {item.id}`)")


def _check_evidence(ws: Workspace, item_id: str, refs: list[str]) -> list[str]:
    if not refs:
        raise Conflict(f"completing {item_id} requires naming evidence receipts "
                       "(`plugkit evidence list`; `plugkit evidence add --task N` records one)")
    ids = []
    for ref in refs:
        receipt = evidence.find(ws, ref)
        problems = evidence.verify(ws, receipt, receipt.id)
        if problems:
            raise Conflict(f"receipt {receipt.id} does not verify: {'; '.join(problems)}")
        ids.append(receipt.id)
    return ids


def prd_add(ws: Workspace, fields: dict[str, Any], now: float) -> tuple[prd.Item, Optional[Transition]]:
    with state_mod.transaction(ws) as st:
        items = gating.load_items(ws)
        item = _validated({**fields, "id": fields.get("id") or prd.next_id(items)})
        if item.status == "completed":
            raise Conflict("add the item as pending, then complete it naming its evidence")
        if item.status == "in_progress":
            _check_start(items, item, st)
        prd.add(items, item)
        _save_items(ws, items)
        moved = gating.note_item_added(st, item.id, now)
        return item.model_copy(deep=True), moved


def prd_update(ws: Workspace, item_id: str, changes: dict[str, Any], status: Optional[str],
               evidence_refs: list[str]) -> prd.Item:
    with state_mod.transaction(ws) as st:
        items = gating.load_items(ws)
        item = prd.get(items, item_id)
        if "blocked_by" in changes or "blocking" in changes:
            prd.set_links(items, item_id, changes.get("blocked_by"), changes.get("blocking"))
        scalars = {k: v for k, v in changes.items() if k in SCALAR_FIELDS}
        if item.risk == "critical" and scalars.get("risk", "critical") != "critical" and item_id not in st.approvals:
            raise Forbidden(f"{item_id} is critical-risk; lowering that is a person's call (`plugkit approve {item_id}`)")
        updated = _validated({**item.model_dump(), **scalars})
        if status is not None and status != item.status:
            if status == "in_progress":
                _check_start(items, updated, st)
            elif status == "completed":
                waiting = prd.unfinished_blockers(items, updated)
                if waiting:
                    raise Conflict(f"{item_id} is blocked by unfinished {', '.join(waiting)}")
                updated.evidence = _check_evidence(ws, item_id, evidence_refs)
            updated.status = status
        elif evidence_refs:
            updated.evidence = _check_evidence(ws, item_id, evidence_refs)
        items[items.index(item)] = updated
        _save_items(ws, items)
        return updated.model_copy(deep=True)


@dataclass(frozen=True)
class Listing:
    items: list[prd.Item]
    approvals: dict[str, Approval]
    waves: list[list[str]]


def prd_list(ws: Workspace) -> Listing:
    items = gating.load_items(ws)
    return Listing(items, state_mod.load(ws).approvals, prd.waves(items))


def prd_ready(ws: Workspace, limit: int) -> Listing:
    listing = prd_list(ws)
    return Listing(prd.ready(listing.items, limit), listing.approvals, listing.waves)


def evidence_add(ws: Workspace, witnessed: Optional[gating.Witnessed], path: Optional[str], subject: str,
                 note: str, now: float) -> evidence.Receipt:
    if (witnessed is None) == (path is None):
        raise Invalid("name a finished task or a file, exactly one")
    with ws.locked():
        if witnessed is not None:
            return evidence.record_output(ws, "task_output", witnessed.seen.output.encode(), witnessed.task,
                                          subject, note, now)
        return evidence.record_file(ws, path or "", subject, note, now)


def check_grant_channel(via: str) -> None:
    if via == "hook":
        # A guard against an agent approving through its own hook pipeline; the runner also
        # judges the caller's process ancestry (runner.core.gates.approvals).
        raise Forbidden("approvals are not accepted from hooks: a person runs `plugkit approve ID`")


def approval_grant(ws: Workspace, item_id: str, user: str, via: str, now: float, channel: str = "",
                   tty: Optional[str] = None, pid: Optional[int] = None) -> Approval:
    check_grant_channel(via)
    with state_mod.transaction(ws) as st:
        prd.get(gating.load_items(ws), item_id)
        st.approvals[item_id] = Approval(item_id=item_id, user=user, via=via, at=now, channel=channel,
                                         tty=tty, pid=pid)
        return st.approvals[item_id].model_copy()


def approval_list(ws: Workspace) -> tuple[list[Approval], list[str]]:
    """(approvals, critical items still waiting for one)."""
    st = state_mod.load(ws)
    try:
        items = gating.load_items(ws)
    except Conflict:
        items = []
    waiting = [i.id for i in items if i.risk == "critical" and i.status != "completed" and i.id not in st.approvals]
    return sorted(st.approvals.values(), key=lambda a: a.at), waiting
