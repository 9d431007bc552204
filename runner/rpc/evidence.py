"""evidence.* — content-addressed receipts under `.plugkit/evidence/`, and their verification.

A receipt's id is the hash of its own content (give at least 6 hex characters of it).
Errors: -32001 no such receipt / no such task in this workspace, -32602 ambiguous prefix,
a path outside the workspace, -32005 the task is still running.
"""

from plugkit.lifecycle import evidence as ev, item_ops
from plugkit.protocol.lifecycle import (
    EvidenceAddParams, EvidenceList, EvidenceRef, EvidenceVerifyParams, EvidenceVerifyResult, ReceiptCheck,
    ReceiptInfo, WorkspaceParams,
)
from runner.core.gates.manager import GateManager
from runner.rpc import shapes
from runner.rpc.dispatch import Context, rpc


def _gates(ctx: Context) -> GateManager:
    return ctx.gate_manager()


@rpc(EvidenceAddParams)
async def add(ctx: Context, p: EvidenceAddParams) -> ReceiptInfo:
    """evidence.add {session_id, cwd, task_id? | path?, subject?, note?} -> ReceiptInfo

    Records a finished task's witnessed output (a task of any session working in this
    same workspace; the receipt then records both sessions; the runner keeps a copy) or a
    workspace file's hash, as a receipt sealed by the runner that work items can name
    when they are completed.
    """
    gates = _gates(ctx)
    ws = gates.workspace(p.session_id, p.cwd)
    seen = await gates.witnessed(ws, p.task_id, p.session_id) if p.task_id is not None else None
    receipt = await gates.call(ws, item_ops.evidence_add, seen, p.path, p.subject, p.note, gates.clock())
    return shapes.receipt(receipt)


@rpc(WorkspaceParams)
async def list_(ctx: Context, p: WorkspaceParams) -> EvidenceList:
    """evidence.list {session_id, cwd} -> {receipts: [ReceiptInfo]} (oldest first)"""
    gates = _gates(ctx)
    receipts = await gates.read(gates.workspace(p.session_id, p.cwd), ev.list_receipts)
    return EvidenceList(receipts=[shapes.receipt(r) for r in receipts])


@rpc(EvidenceRef)
async def show(ctx: Context, p: EvidenceRef) -> ReceiptInfo:
    """evidence.show {session_id, cwd, receipt_id} -> ReceiptInfo"""
    gates = _gates(ctx)
    return shapes.receipt(await gates.read(gates.workspace(p.session_id, p.cwd), ev.find, p.receipt_id))


@rpc(EvidenceVerifyParams)
async def verify(ctx: Context, p: EvidenceVerifyParams) -> EvidenceVerifyResult:
    """evidence.verify {session_id, cwd, receipt_ids?} -> {ok, checked, results: [{id, ok, problems}]}

    Re-hashes each receipt (an edited receipt no longer matches its id), checks the
    runner's seal on it (a hand-written receipt has none) and the workspace it names,
    its kept output copy, or the file it names (changed since, or gone), and that its
    task is in the runner's ledger as described. No ids: every receipt.
    """
    gates = _gates(ctx)
    found = await gates.verify_evidence(gates.workspace(p.session_id, p.cwd), list(p.receipt_ids))
    results = [ReceiptCheck(id=rid, ok=not problems, problems=problems) for rid, problems in found]
    return EvidenceVerifyResult(ok=all(r.ok for r in results), checked=len(results), results=results)


METHODS = {"evidence.add": add, "evidence.list": list_, "evidence.show": show, "evidence.verify": verify}
