"""Work items, evidence and approvals as operations on one workspace (synchronous, file-based).

Every write holds the workspace lock for the whole read-modify-write of `.prd` and
state.json, so two agents updating items at once cannot lose one another's change.
Status moves and the rules a person relies on (approvals, checks) are item_states'; here,
that completing names receipts that still verify, and a critical item stops being critical
only after a person approved it.
"""

from dataclasses import dataclass
from typing import Any, Optional

from pydantic import ValidationError

from plugkit.lifecycle import authority, evidence, gating, item_states, prd, state as state_mod
from plugkit.lifecycle.errors import Conflict, Forbidden, Invalid
from plugkit.lifecycle.state import Approval, Transition
from plugkit.lifecycle.workspace import Workspace, atomic_write

SCALAR_FIELDS = ("subject", "acceptance", "edge_cases", "effort", "risk", "verify")


def _save_items(ws: Workspace, items: list[prd.Item], by_id: dict[str, prd.Item], changed: set[str]) -> None:
    """`changed`: the ids of every item the operation changed (the rest are stored as they were)."""
    if ws.ledger is not None:  # the ledger first; .prd is its view
        authority.commit(ws, items=items, changed={i: by_id[i] for i in changed})
        return
    atomic_write(ws.prd_path, prd.dump(items))


def _validated(data: dict[str, Any]) -> prd.Item:
    try:
        return prd.Item.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise Invalid(f"work item {where}: {first['msg']}") from None


def _receipts(ws: Workspace, refs: list[str]) -> list[evidence.Receipt]:
    """The named receipts, each still verifying (the seal, its artifact); whether one proves an
    item's check is item_states' question."""
    found = []
    for ref in refs:
        receipt = evidence.find(ws, ref)
        problems = evidence.verify(ws, receipt, receipt.id)
        if problems:
            raise Conflict(f"receipt {receipt.id} does not verify: {'; '.join(problems)}")
        found.append(receipt)
    return found


def prd_add(ws: Workspace, fields: dict[str, Any], now: float) -> tuple[prd.Item, Optional[Transition]]:
    with state_mod.transaction(ws) as st:
        items = gating.load_items(ws)
        by_id = {i.id: i for i in items}
        item = _validated({**fields, "id": fields.get("id") or prd.next_id(items, by_id)})
        if item.status == "completed":
            raise Conflict("add the item as pending, then complete it naming its evidence")
        wanted, item.status = item.status, "pending"
        changed = prd.add(items, item, by_id)  # linked first: its blockers are part of the move
        if wanted != item.status:  # added as under way: a move like any other (blockers, approval)
            item_states.move(items, item, wanted, st, item_states.Site(), [])
        _save_items(ws, items, by_id, changed)
        moved = gating.note_item_added(st, item.id, now)
        return item.model_copy(deep=True), moved


def prd_update(ws: Workspace, item_id: str, changes: dict[str, Any], status: Optional[str],
               evidence_refs: list[str], site: item_states.Site = item_states.Site(),
               person: item_states.Person = item_states.Person()) -> prd.Item:
    """`site` is what the runner sees now (the workspace's check, git's HEAD); `person`, whether
    the caller passed the approvals' person check (only a change of an item's check asks)."""
    with state_mod.transaction(ws) as st:
        items = gating.load_items(ws)
        by_id = {i.id: i for i in items}
        item = prd.get(items, item_id) if item_id not in by_id else by_id[item_id]
        changed = {item_id}
        if "blocked_by" in changes or "blocking" in changes:
            changed |= prd.set_links(items, item_id, changes.get("blocked_by"), changes.get("blocking"), by_id)
        scalars = {k: v for k, v in changes.items() if k in SCALAR_FIELDS}
        if item.risk == "critical" and scalars.get("risk", "critical") != "critical" and item_id not in st.approvals:
            raise Forbidden(f"{item_id} is critical-risk; lowering that is a person's call (`plugkit approve {item_id}`)")
        if "verify" in scalars:
            item_states.check_change(item, scalars["verify"], site, person)
        updated = _validated({**item.model_dump(), **scalars})
        receipts = _receipts(ws, evidence_refs)
        if status is not None and status != item.status:
            item_states.move(items, updated, status, st, site, receipts)
        if receipts:
            updated.evidence = [r.id for r in receipts]
        item_states.admit(updated, st)  # whatever changed (a risk raised on an item under way)
        # By identity: list.index would compare models field by field down the whole list.
        items[next(k for k, i in enumerate(items) if i is item)] = by_id[item_id] = updated
        _save_items(ws, items, by_id, changed)
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
                 note: str, now: float, head: Optional[str] = None) -> evidence.Receipt:
    if (witnessed is None) == (path is None):
        raise Invalid("name a finished task or a file, exactly one")
    with ws.locked():
        if witnessed is not None:
            return evidence.record_output(ws, "task_output", witnessed.seen.output.encode(), witnessed.task,
                                          subject, note, now, head=head,
                                          run=witnessed.run)
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


def approval_revoke(ws: Workspace, item_id: str) -> bool:
    """The item's approval, if any, goes: what it approved was undone (plugkit work rollback)."""
    with state_mod.transaction(ws) as st:
        return st.approvals.pop(item_id, None) is not None


def approval_list(ws: Workspace) -> tuple[list[Approval], list[str]]:
    """(approvals, critical items still waiting for one)."""
    st = state_mod.load(ws)
    try:
        items = gating.load_items(ws)
    except Conflict:
        items = []
    waiting = [i.id for i in item_states.waiting_for_approval(items, st)]
    return sorted(st.approvals.values(), key=lambda a: a.at), waiting
