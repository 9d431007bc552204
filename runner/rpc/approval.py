"""approval.* — a person's approval of a critical-risk work item, recorded with user, terminal, time.

approval.grant is judged by who is calling, found by the runner itself: the process holding
the client end of the TCP connection and its ancestry (runner.core.gates.approvals). A
plugkit task or an agent host in that chain is the agent asking, and is refused, unless
the host's own permission prompt asked the person for exactly that command first. Calls
that say they come through a hook (via "hook") are refused as before. What the caller
says about its user is not recorded: the OS user of the calling process is.
"""

from plugkit.lifecycle import item_ops
from plugkit.protocol.lifecycle import ApprovalGrantParams, ApprovalInfo, ApprovalList, WorkspaceParams
from runner.core.gates.manager import GateManager
from runner.rpc import shapes
from runner.rpc.context import PEER
from runner.rpc.dispatch import Context, rpc


def _gates(ctx: Context) -> GateManager:
    return ctx.gate_manager()


@rpc(ApprovalGrantParams)
async def grant(ctx: Context, p: ApprovalGrantParams) -> ApprovalInfo:
    """approval.grant {session_id, cwd, item_id, via: cli|hook|rpc, user}
    -> {item_id, user, via, at, channel: terminal|host_prompt, tty}

    Errors: -32002 via "hook", or the caller is a plugkit task, runs under an agent host
    without the host's prompt, or cannot be identified; -32001 no such work item.
    Example: {"method":"approval.grant","params":{"session_id":"s","cwd":"/w","item_id":"w7",
              "via":"cli","user":"alice"}}
    """
    gates = _gates(ctx)
    approval = await gates.grant(gates.workspace(p.session_id, p.cwd), p.item_id, p.via, PEER.get(),
                                 ctx.runtime.port, ctx.runtime.pid)
    return shapes.shape(ApprovalInfo, approval)


@rpc(WorkspaceParams)
async def list_(ctx: Context, p: WorkspaceParams) -> ApprovalList:
    """approval.list {session_id, cwd} -> {approvals: [ApprovalInfo], waiting: [critical item ids not approved]}"""
    gates = _gates(ctx)
    approvals, waiting = await gates.read(gates.workspace(p.session_id, p.cwd), item_ops.approval_list)
    return ApprovalList(approvals=[shapes.shape(ApprovalInfo, a) for a in approvals], waiting=waiting)


METHODS = {"approval.grant": grant, "approval.list": list_}
