"""approval.* — a person's approval of a critical-risk work item, recorded with user and time.

approval.grant refuses calls made through a hook (via "hook"): the platform hooks run on
the agent's tool calls, so an approval arriving that way would be the agent approving
itself. The CLI (`plugkit approve ID`) sends via "cli" and the OS user name. This is a
guard against agents approving through hooks (and, with gate.check asking the person
before a shell `plugkit approve`, through their shell tool), not against a determined
local user, who owns the workspace's files anyway.
"""

from plugkit.lifecycle import work
from plugkit.protocol.lifecycle import ApprovalGrantParams, ApprovalInfo, ApprovalList, WorkspaceParams
from runner.core.gates.manager import GateManager
from runner.rpc import shapes
from runner.rpc.dispatch import Context, rpc


def _gates(ctx: Context) -> GateManager:
    return ctx.gate_manager()


@rpc(ApprovalGrantParams)
async def grant(ctx: Context, p: ApprovalGrantParams) -> ApprovalInfo:
    """approval.grant {session_id, cwd, item_id, via: cli|hook|rpc, user} -> {item_id, user, via, at}

    Errors: -32002 via "hook"; -32001 no such work item.
    Example: {"method":"approval.grant","params":{"session_id":"s","cwd":"/w","item_id":"w7",
              "via":"cli","user":"alice"}}
    """
    gates = _gates(ctx)
    approval = await gates.call(gates.workspace(p.session_id, p.cwd), work.approval_grant, p.item_id,
                                p.user, p.via, gates.clock())
    return shapes.shape(ApprovalInfo, approval)


@rpc(WorkspaceParams)
async def list_(ctx: Context, p: WorkspaceParams) -> ApprovalList:
    """approval.list {session_id, cwd} -> {approvals: [ApprovalInfo], waiting: [critical item ids not approved]}"""
    gates = _gates(ctx)
    approvals, waiting = await gates.read(gates.workspace(p.session_id, p.cwd), work.approval_list)
    return ApprovalList(approvals=[shapes.shape(ApprovalInfo, a) for a in approvals], waiting=waiting)


METHODS = {"approval.grant": grant, "approval.list": list_}
