"""mutable.* — named unknowns of a workspace, made KNOWN only by a task the runner witnessed.

Errors: -32602 bad name / params, -32001 no such task in this workspace (the same answer
for an unknown id and another workspace's id), -32005 task still running, mutable
already known, or its output truncated (name a regex then).
"""

from plugkit.lifecycle import state as state_mod
from plugkit.lifecycle.gating import add_mutable
from plugkit.protocol.lifecycle import (
    MutableAddParams, MutableAdded, MutableInfo, MutableList, MutableResolveParams, ResolveResult,
    WorkspaceParams,
)
from runner.core.gates.manager import GateManager
from runner.rpc import shapes
from runner.rpc.dispatch import Context, rpc


def _gates(ctx: Context) -> GateManager:
    return ctx.gate_manager()


@rpc(MutableAddParams)
async def add(ctx: Context, p: MutableAddParams) -> MutableAdded:
    """mutable.add {session_id, cwd, name, expected?, description?} -> {mutable, phase, transition?}

    A new unknown. Outside PLAN it sends the workspace back to PLAN (trigger new_unknown).
    Example: {"method":"mutable.add","params":{"session_id":"s","cwd":"/w","name":"db_port"}}
    """
    gates = _gates(ctx)
    ws = gates.workspace(p.session_id, p.cwd)
    m, st, moved = await gates.call(ws, add_mutable, p.name, p.expected, p.description, gates.clock())
    return MutableAdded(mutable=shapes.shape(MutableInfo, m), phase=st.phase, transition=shapes.transition(moved))


@rpc(MutableResolveParams)
async def resolve(ctx: Context, p: MutableResolveParams) -> ResolveResult:
    """mutable.resolve {session_id, cwd, name, task_id, line? | regex?}
    -> {mutable, known, failed_attempt, reason, receipt, phase, transition?}

    The task must have run in a session of this workspace (any session id working in the same
    workspace; the receipt then records both sessions) and finished.
    The value is read from its witnessed output (stdout and stderr as captured): the whole
    of it stripped, line N (1-based, -1 the last), or the regex's first group (else the
    whole match). A receipt (task id, code hash, exit code, output hash, time) is written
    for every attempt. A failed attempt (exit code not 0, no such line/match, or a value
    other than `expected`) counts; the second sends the workspace back to PLAN
    (trigger unresolved_after_two_attempts).
    Example: {"method":"mutable.resolve","params":{"session_id":"s","cwd":"/w","name":"db_port",
              "task_id":12,"regex":"port=(\\\\d+)"}}
    """
    gates = _gates(ctx)
    r = await gates.resolve(gates.workspace(p.session_id, p.cwd), p.name, p.task_id, p.line, p.regex,
                            p.session_id)
    return ResolveResult(mutable=shapes.shape(MutableInfo, r.mutable), known=r.outcome.known,
                         failed_attempt=r.outcome.failed, reason=r.attempt.reason, receipt=r.receipt.id,
                         phase=r.state.phase, transition=shapes.transition(r.transition))


@rpc(WorkspaceParams)
async def list_(ctx: Context, p: WorkspaceParams) -> MutableList:
    """mutable.list {session_id, cwd} -> {mutables: [{name, status, value, expected, attempts, resolved_by, ...}]}"""
    gates = _gates(ctx)
    st = await gates.read(gates.workspace(p.session_id, p.cwd), state_mod.load)
    return MutableList(mutables=[shapes.shape(MutableInfo, m) for m in st.mutables.values()])


METHODS = {"mutable.add": add, "mutable.resolve": resolve, "mutable.list": list_}
