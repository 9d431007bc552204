"""audit.* — the gates' ledger as a hash chain: checked (`plugkit audit verify`) and its breaks
acknowledged by a person (`plugkit audit ack`). One chain per runner home, across workspaces."""

from plugkit.protocol.audit import AuditAcked, AuditReport, LedgerBreak
from plugkit.protocol.lifecycle import WorkspaceParams
from runner.core.gates import audit as core_audit
from runner.rpc.context import PEER
from runner.rpc.dispatch import Context, rpc


@rpc(WorkspaceParams)
async def verify(ctx: Context, p: WorkspaceParams) -> AuditReport:
    """audit.verify {session_id, cwd} -> {ok, records, breaks: [{seq, text, acknowledged}], sealed_at}

    Walks the chain (each record's hash, its predecessor's, the last signed head) and the tables
    it describes; the first break named is the first record edited, removed or moved. Signs the
    head when nothing is left unacknowledged.
    Example: {"method":"audit.verify","params":{"session_id":"s","cwd":"/w"}}
    """
    gates = ctx.gate_manager()
    gates.workspace(p.session_id, p.cwd)  # the same checks of cwd as every gate call
    done = await core_audit.verify(gates)
    return AuditReport(ok=all(b.acknowledged for b in done.breaks), records=done.records,
                       breaks=[LedgerBreak(seq=b.seq, text=b.text, acknowledged=b.acknowledged) for b in done.breaks],
                       sealed_at=done.sealed_at)


@rpc(WorkspaceParams)
async def ack(ctx: Context, p: WorkspaceParams) -> AuditAcked:
    """audit.ack {session_id, cwd} -> {acknowledged: [break texts], user}

    A person saw the ledger's breaks: they stop blocking COMPLETE (still listed by audit.verify,
    as acknowledged). Judged as approval.grant is. Errors: -32002 not a person.
    """
    gates = ctx.gate_manager()
    ws = gates.workspace(p.session_id, p.cwd)
    texts, user = await core_audit.acknowledge(gates, ws.root, PEER.get(), ctx.runtime.port, ctx.runtime.pid)
    return AuditAcked(acknowledged=texts, user=user)


METHODS = {"audit.verify": verify, "audit.ack": ack}
