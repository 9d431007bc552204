"""prd.* — work items in `.prd` at the workspace root (a JSON array), and their ready waves.

blocked_by/blocking stay bidirectional whichever side is edited; a change closing a cycle
is refused (-32602, data.cycle names it). Completing an item requires naming evidence
receipts that still verify, one of them its check run green at HEAD (prd.verify); a
critical-risk item is in_progress or completed only once a person approved it (-32002).
Errors: -32001 no such item, -32005 blocked by unfinished items, .prd unreadable.
"""

from plugkit.lifecycle import item_ops
from plugkit.protocol.lifecycle import (
    PrdAddParams, PrdAdded, PrdItem, PrdList, PrdReadyParams, PrdUpdateParams, PrdVerified, PrdVerifyParams,
    WorkspaceParams,
)
from runner.core.gates.checks import Asker
from runner.core.gates.manager import GateManager
from runner.rpc import shapes
from runner.rpc.context import PEER
from runner.rpc.dispatch import Context, rpc

_LINK_AND_TEXT = ("subject", "acceptance", "edge_cases", "blocked_by", "blocking", "effort", "risk", "verify")


def _gates(ctx: Context) -> GateManager:
    return ctx.gate_manager()


@rpc(PrdAddParams)
async def add(ctx: Context, p: PrdAddParams) -> PrdAdded:
    """prd.add {session_id, cwd, subject, id?, status?, acceptance?, edge_cases?, blocked_by?,
    blocking?, effort?, risk?, verify?} -> {item, transition?}

    id defaults to the next wN. In PLAN the item counts toward the planning pass; in
    COMPLETE it reopens the workspace (COMPLETE -> PLAN, row new_work).
    Example: {"method":"prd.add","params":{"session_id":"s","cwd":"/w","subject":"Login form",
              "acceptance":["rejects a bad password"],"blocked_by":["w1"]}}
    """
    gates = _gates(ctx)
    fields = p.model_dump(exclude={"session_id", "cwd"})
    item, moved = await gates.call(gates.workspace(p.session_id, p.cwd), item_ops.prd_add, fields, gates.clock())
    return PrdAdded(item=shapes.item(item, {}), transition=shapes.transition(moved))


@rpc(PrdUpdateParams)
async def update(ctx: Context, p: PrdUpdateParams) -> PrdItem:
    """prd.update {session_id, cwd, id, subject?, status?, acceptance?, edge_cases?, blocked_by?,
    blocking?, effort?, risk?, verify?, evidence?: [receipt ids]} -> PrdItem

    Only the fields given change (a list given replaces the list). status "completed"
    requires `evidence`: receipts sealed by this runner, whose tasks its ledger holds, one
    of them a green run of the item's check at the current git HEAD (prd.verify makes one).
    Changing a check the item has (its own, or the workspace's it falls back to) is a
    person's act, judged by the caller's process ancestry as approval.grant is: -32002 else.
    """
    gates = _gates(ctx)
    changes = {k: getattr(p, k) for k in _LINK_AND_TEXT if getattr(p, k) is not None}
    asker = Asker(PEER.get(), ctx.runtime.port, ctx.runtime.pid)
    item = await gates.prd_update(gates.workspace(p.session_id, p.cwd), p.id, changes, p.status,
                                  list(p.evidence), asker)
    return shapes.item(item, {})


@rpc(PrdVerifyParams)
async def verify(ctx: Context, p: PrdVerifyParams) -> PrdVerified:
    """prd.verify {session_id, cwd, id, environ?} -> {item_id, check, task_id, outcome, detail, receipt, head?}

    Runs the item's check (its verify, else the workspace's) as a task of the caller's session
    in the workspace, in the caller's `environ` (else the runner's), waits for it (up to verify_timeout_s), and seals a receipt naming the
    git HEAD it ran at. Errors: -32001 no such item, -32005 the item has no check.
    Example: {"method":"prd.verify","params":{"session_id":"s","cwd":"/w","id":"w1"}}
    """
    gates = _gates(ctx)
    run = await gates.prd_check(p.session_id, gates.workspace(p.session_id, p.cwd), p.id, p.environ)
    return PrdVerified(item_id=p.id, check=run.check,
                       task_id=run.task.id, outcome="green" if run.green else "red", detail=run.task.message,
                       receipt=run.receipt.id, head=run.receipt.head)


@rpc(WorkspaceParams)
async def list_(ctx: Context, p: WorkspaceParams) -> PrdList:
    """prd.list {session_id, cwd} -> {items: [PrdItem], waves: [[id]]} (waves: open items by dependency depth)"""
    gates = _gates(ctx)
    listing = await gates.read(gates.workspace(p.session_id, p.cwd), item_ops.prd_list)
    return PrdList(items=[shapes.item(i, listing.approvals) for i in listing.items], waves=listing.waves)


@rpc(PrdReadyParams)
async def ready(ctx: Context, p: PrdReadyParams) -> PrdList:
    """prd.ready {session_id, cwd, limit?} -> {items, waves}

    The next wave: pending items whose blockers are all completed, in file order, at most
    `limit` (default: ready_limit in .plugkit/config.toml, else 3).
    """
    gates = _gates(ctx)
    ws = gates.workspace(p.session_id, p.cwd)
    listing = await gates.read(ws, item_ops.prd_ready, p.limit or gates.config(ws).ready_limit)
    return PrdList(items=[shapes.item(i, listing.approvals) for i in listing.items], waves=listing.waves)


METHODS = {"prd.add": add, "prd.update": update, "prd.verify": verify, "prd.list": list_, "prd.ready": ready}
