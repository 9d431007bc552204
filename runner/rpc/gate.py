"""gate.* — a workspace's phase: read it, move it forward or back, and the hooks' questions.

Phases PLAN -> EXECUTE -> EMIT -> VERIFY -> COMPLETE. Forward moves happen only when every
condition of the row holds; an unmet row is an ordinary answer (ok false, the conditions
by name with their values), not an error. All methods take {session_id, cwd}; the
workspace is plugkit.workspace.find_root(cwd): the nearest ancestor holding a marker (.git,
.prd, .plugkit/config.toml, ...), else the cwd. Errors: -32602 bad params / empty session /
missing cwd / a cwd that is /, $HOME or $PLUGKIT_HOME (never a workspace), -32005 the phase
does not allow it.
"""

from plugkit.lifecycle.phases import FORWARD_FROM
from plugkit.protocol.lifecycle import (
    AdvanceResult, CheckResult, CiConfirmed, GateCiParams, ConfigConfirmed, ContextLines, EmitResult, GateAdvanceParams, GateCheckParams, GateEmitParams,
    GateRetreatParams, GateStatus, GateStopParams, GateVerifyParams, RestoreResult, StopResult, TransitionInfo,
    VerifyInfo, VerifyStarted, WorkspaceParams,
)
from runner.core.gates.manager import GateManager
from runner.rpc import shapes
from runner.rpc.dispatch import Context, rpc
from runner.rpc.context import PEER


def _gates(ctx: Context) -> GateManager:
    return ctx.gate_manager()


@rpc(WorkspaceParams)
async def status(ctx: Context, p: WorkspaceParams) -> GateStatus:
    """gate.status {session_id, cwd} -> {workspace, mode, phase, entered_at, next_phase,
    conditions: [{name, holds, value}] (the next row's, as an advance now would find them),
    unknown_mutables, emission, verify, history (newest 10), notices, tampered}

    The runner's ledger is the source of truth; `.plugkit/state.json` and `.prd` are its
    views. `tampered` lists each field of a view edited outside plugkit ("FILE: FIELD says
    X, the runner holds Y"): never taken as true, and VERIFY -> COMPLETE (and Stop) wait
    until the edit is reverted, redone through plugkit, or dropped by gate.restore.
    Example: {"method":"gate.status","params":{"session_id":"s","cwd":"/w"}}
    """
    gates = _gates(ctx)
    ws = gates.workspace(p.session_id, p.cwd)
    st, cfg, checks = await gates.status(ws)
    return GateStatus(
        workspace=ws.root, mode=cfg.mode, phase=st.phase, entered_at=st.entered_at,
        next_phase=FORWARD_FROM[st.phase].target, conditions=shapes.conditions(checks),
        unknown_mutables=st.unknown(), emission=None if st.emission is None else [d.path for d in st.emission],
        verify=None if st.verify is None else shapes.shape(VerifyInfo, st.verify),
        history=[shapes.shape(TransitionInfo, t) for t in st.history[-10:]],
        notices=st.notices + list(cfg.problems), tampered=await gates.tampered(ws))


@rpc(WorkspaceParams)
async def restore(ctx: Context, p: WorkspaceParams) -> RestoreResult:
    """gate.restore {session_id, cwd} -> {dropped: [the outside edits the views lost]}

    Writes `.plugkit/state.json` and `.prd` again from the runner's ledger, dropping edits
    made outside plugkit (and items proposed by hand: add them with prd.add); a notice in
    the state records it. Errors: -32005 the workspace is busy.
    """
    gates = _gates(ctx)
    return RestoreResult(dropped=await gates.restore(gates.workspace(p.session_id, p.cwd)))


@rpc(WorkspaceParams)
async def confirm_config(ctx: Context, p: WorkspaceParams) -> ConfigConfirmed:
    """gate.confirm_config {session_id, cwd} -> {workspace, changed: ["KEY: HELD -> NOW"], user, tty}

    The runner holds the workspace's settings from the moment it opts in; a weaker value in
    `.plugkit/config.toml` (or one it cannot rank) shows as tampered and is not in force
    until a person takes it with this call. Judged by the caller's process as
    approval.grant is: a terminal of its own, no agent host, task or adopted orphan.
    Errors: -32002 not a person.
    Example: {"method":"gate.confirm_config","params":{"session_id":"s","cwd":"/w"}}
    """
    gates = _gates(ctx)
    ws = gates.workspace(p.session_id, p.cwd)
    done = await gates.confirm_config(ws, PEER.get(), ctx.runtime.port, ctx.runtime.pid)
    return ConfigConfirmed(workspace=ws.root, changed=done.changed, user=done.user, tty=done.tty)


@rpc(GateAdvanceParams)
async def advance(ctx: Context, p: GateAdvanceParams) -> AdvanceResult:
    """gate.advance {session_id, cwd, to?} -> {ok, phase, to, unmet: [{name, holds, value}],
    conditions, transition?}

    Takes the forward row out of the current phase when all its conditions hold. `to`, when
    given, must be that row's target (no skipping). In PLAN, calling advance declares the
    planning pass complete: it moves on when that pass added no mutable and no work item.
    Errors: -32005 `to` is not the next phase.
    Example: {"method":"gate.advance","params":{"session_id":"s","cwd":"/w","to":"EXECUTE"}}
    """
    gates = _gates(ctx)
    r = await gates.advance(gates.workspace(p.session_id, p.cwd), p.to)
    checks = shapes.conditions(r.checks)
    return AdvanceResult(ok=r.ok, phase=r.state.phase, to=r.target, conditions=checks,
                         unmet=[c for c in checks if not c.holds], transition=shapes.transition(r.transition))


@rpc(GateRetreatParams)
async def retreat(ctx: Context, p: GateRetreatParams) -> TransitionInfo:
    """gate.retreat {session_id, cwd, trigger, reason} -> TransitionInfo

    trigger: new_unknown | replan (-> PLAN, from any later phase), verify_failed_code
    (VERIFY -> EXECUTE), verify_failed_emit (VERIFY -> EMIT). "unresolved_after_two_attempts"
    is recorded by the runner itself. Errors: -32005 the trigger does not apply in this phase.
    """
    gates = _gates(ctx)
    return shapes.shape(TransitionInfo, await gates.retreat(gates.workspace(p.session_id, p.cwd),
                                                            p.trigger, p.reason))


@rpc(GateEmitParams)
async def emit(ctx: Context, p: GateEmitParams) -> EmitResult:
    """gate.emit {session_id, cwd, files: [{path, sha256? | content?}]} -> {phase, declared}

    Declares what the emission will write (in EXECUTE or EMIT), replacing any earlier
    declaration; EMIT -> VERIFY requires each file to exist with exactly that content.
    Paths are relative to the workspace (or absolute inside it).
    """
    gates = _gates(ctx)
    st = await gates.emit(gates.workspace(p.session_id, p.cwd), p.files)
    return EmitResult(phase=st.phase, declared=[d.path for d in st.emission or []])


@rpc(GateVerifyParams)
async def verify(ctx: Context, p: GateVerifyParams) -> VerifyStarted:
    """gate.verify {session_id, cwd, wait_ms?=0, environ?} -> {task: TaskInfo, verify: {task_id, outcome, ...}}

    Runs the workspace's configured `verify` command (.plugkit/config.toml) as a task of
    this session in the workspace root, in the caller's `environ` (else the runner's), and
    waits up to wait_ms. Its outcome is recorded
    with an evidence receipt when it ends; only a green run started in this VERIFY phase,
    at the current git HEAD, satisfies verify_green. Errors: -32005 not in VERIFY, no
    command configured, or a verify run already running.
    """
    gates = _gates(ctx)
    info, run = await gates.verify(p.session_id, gates.workspace(p.session_id, p.cwd), p.wait_ms, p.environ)
    return VerifyStarted(task=shapes.task_info(info), verify=shapes.shape(VerifyInfo, run))


@rpc(GateCheckParams)
async def check(ctx: Context, p: GateCheckParams) -> CheckResult:
    """gate.check {session_id, cwd, event, tool_name?, tool_input?} -> {decision: allow|deny|ask, reason, mode}

    For PreToolUse hooks. Enforce mode: file-writing tools (Write, Edit, MultiEdit,
    NotebookEdit, write_file, replace, apply_patch) are denied in PLAN and EXECUTE (the
    reason names the unknown mutables, else the phase) and in COMPLETE, and always for
    .prd and .plugkit/, and so is a shell command that writes .prd or .plugkit/state.json
    or evidence (redirection, sed -i, cp, a script's write call); shell `git commit`/`git
    push` is denied while mutables are unknown; an approval attempt in any spelling the
    call shows (`plugkit approve` through variables, quotes, env -u, sh -c; exec: code or
    a command naming approve / approval.grant) asks the person (`--list` only reads);
    other commands starting with `exec:` or `plugkit exec` are allowed. Advisory mode (the
    default): a deny becomes allow with the reason as a warning. Off: allow. Other events: allow.
    Example: {"method":"gate.check","params":{"session_id":"s","cwd":"/w","event":"PreToolUse",
              "tool_name":"Write","tool_input":{"file_path":"/w/a.py","content":"x"}}}
    """
    gates = _gates(ctx)
    verdict, mode = await gates.check(gates.workspace(p.session_id, p.cwd), p.event, p.tool_name,
                                      dict(p.tool_input))
    return CheckResult(decision=verdict.decision, reason=verdict.reason, mode=mode)


@rpc(GateStopParams)
async def stop(ctx: Context, p: GateStopParams) -> StopResult:
    """gate.stop {session_id, cwd, stop_hook_active?} -> {block, reason, missing, mode}

    For Stop hooks. Blocks (enforce mode) while VERIFY -> COMPLETE does not hold: open work
    items, unknown mutables, running tasks in the workspace, a dirty or unpushed git tree,
    no green verify, or the phase not yet COMPLETE; `missing` lists them shortest first.
    With stop_hook_active, it never blocks twice in a row with the same reason. Advisory:
    block false, reason as a warning. Off: block false.
    """
    gates = _gates(ctx)
    verdict, mode = await gates.stop(gates.workspace(p.session_id, p.cwd), p.stop_hook_active)
    return StopResult(block=verdict.block, reason=verdict.reason, missing=verdict.missing, mode=mode)


@rpc(WorkspaceParams)
async def context(ctx: Context, p: WorkspaceParams) -> ContextLines:
    """gate.context {session_id, cwd} -> {lines: [str]} (at most 15; none when gates are off)

    For SessionStart / UserPromptSubmit hooks: phase, unknown mutables, the ready wave,
    critical items waiting for a person's approval, what to do next.
    """
    gates = _gates(ctx)
    return ContextLines(lines=await gates.context(gates.workspace(p.session_id, p.cwd)))


@rpc(GateCiParams)
async def ci(ctx: Context, p: GateCiParams) -> CiConfirmed:
    """gate.ci {session_id, cwd, wait_ms?=0} -> {sha, provider, state: green|red|pending|error, note, log}

    The runner asks CI about the commit HEAD is at (`ci` in .plugkit/config.toml: local runs
    `ci_command` in a clean clone of it; github/gitlab ask the provider's API with the runner's
    own token) and records the answer, which COMPLETE's ci_green condition reads. While CI is
    pending it asks again until wait_ms. A red answer carries the failing job and its log's
    tail. Errors: -32005 no ci configured, or no commit; -32602 a token file not 0600.
    """
    from runner.core.gates import ci as ci_mod

    gates = _gates(ctx)
    run, log = await ci_mod.confirm(gates, p.session_id, gates.workspace(p.session_id, p.cwd), p.wait_ms / 1000)
    return CiConfirmed(sha=run.sha, provider=run.provider, state=run.state, note=run.note, log=log)


METHODS = {
    "gate.status": status, "gate.advance": advance, "gate.retreat": retreat, "gate.emit": emit,
    "gate.verify": verify, "gate.check": check, "gate.stop": stop, "gate.context": context,
    "gate.restore": restore, "gate.confirm_config": confirm_config, "gate.ci": ci,
}
