"""hook.* — the platform hooks' canonical events: session start and end, prompt, pre-tool, stop.

The client adapters (client/hooks/) turn each platform's stdin into these calls and
render the answers in that platform's own format; here the answers are decided. The
lifecycle gates decide pre_tool and stop, and add context lines, when their manager is
composed in (ctx.gates); without them every call is allowed and nothing blocks.
What each session was last told (the status injected, the last Stop block reason) is
kept in a bounded HookMemory (ctx.hooks) and dropped at session end.

Errors: -32602 bad params. A gate that cannot answer (its files unreadable, say) never
turns into an error here: pre_tool allows with a warning, stop does not block.
"""

import asyncio
import os

from plugkit import enforce_pins
from plugkit.refusals import Refused
from plugkit.memory import index_for_context
from plugkit.vocab import LIVE_STATES
from plugkit.lifecycle import config as config_mod
from plugkit.workspace import NotAWorkspace, refusal, root_or_none
from plugkit.protocol.hook import (
    HookContext, HookDecision, HookPreToolParams, HookPromptResult, HookSessionEnded, HookSessionParams,
    HookSessionStartParams, HookStopParams, HookStopResult,
)
from runner.system import logs
from runner.core.tasks.sessions import session_key
from runner.core.tasks.task import SessionKey
from runner.rpc.dispatch import Context, rpc

log = logs.get("plugkit.hooks")

MAX_TASK_LINES = 8
MAX_MEMORY_LINES = 15
MAX_MEMORY_BYTES = 2048
MAX_CONTEXT_LINES = 40
USAGE_LINE = ("plugkit: to run code, make a Bash call whose first line is `exec:<lang>` (python, bash, "
              "node, ...) and the code below it; it runs in the plugkit runner and its output comes back "
              "as the call's result. `exec:tasks`, `exec:status task_N`, `exec:sleep task_N [S]`, "
              "`exec:close task_N` follow tasks up.")
SEARCH_LINE = ("plugkit: `plugkit search QUERY` (a Bash call) finds definitions (symbol -> file:line), code and "
               "the commits behind a change from a warm index of this repository; prefer it to grep.")


def _work_hooks():
    """Imported only when a `plugkit work` worker calls: other hook calls never pay for it."""
    from runner.core.work import hooks as work_hooks

    return work_hooks


def _key(p: HookSessionParams) -> SessionKey:
    return session_key(p.session_id, p.cwd)


def _worker(ctx: Context, p: HookSessionParams):
    """(worker, repo, base) when this call is a `plugkit work` worker's own, else None: the item
    it works on (an ItemRun, or a Hosted for a supervisor elsewhere), and where its commits are
    counted from (the run's branch in its workspace; a hosted one's starting commit in its worktree).

    The worker policy replaces the gates, so it must not follow a cwd: any session can `cd`
    into a live worker's worktree. It follows the worker's session tag (the one the runner set
    when it spawned the worker, carried by its host's environment into its hooks)."""
    if not p.worker_session:
        return None
    worker = ctx.worker_at(p.cwd)  # a heartbeat, from the worker alone
    if worker is not None and worker[1].session_id == p.worker_session:
        run, it = worker
        return it, run.workspace, run.branch
    hosted = ctx.hosted_at(p.cwd, p.worker_session)  # counted: the node side relays it as a heartbeat
    return (hosted, hosted.worktree, hosted.base) if hosted is not None else None


def _gated(ctx: Context, p: HookSessionParams) -> HookSessionParams:
    """Any other session in a live worker's worktree meets the gates of the run's workspace: the
    worktree is a checkout of that project, not a fresh workspace of its own."""
    manager = ctx.work.peek() if ctx.work is not None else None
    found = manager.worker_at(p.cwd, beat=False) if manager is not None else None
    return p.model_copy(update={"cwd": found[0].workspace}) if found is not None else p


def _gates(ctx: Context, p: HookSessionParams):
    """The gate manager, or None when there is nothing to gate: no gates composed in, or a cwd of
    /, $HOME or $PLUGKIT_HOME (never a workspace; a note there on every tool call would be noise)."""
    if ctx.gates is None or (os.path.isabs(p.cwd) and refusal(os.path.realpath(p.cwd)) is not None):
        return None
    return ctx.gates.get()


# --- the gates, through three adapter functions --------------------------------------------
# Only GateManager's public methods are used: workspace(session_id, cwd), check(ws, event,
# tool_name, tool_input, platform) -> (Verdict{decision, reason}, mode), stop(ws, stop_hook_active) ->
# (StopVerdict{block, reason, missing}, mode), context(ws) -> [str].
# A workspace that never used the gates hears nothing from them: someone who installed
# the hooks for exec: alone must not get "phase is PLAN" at every turn. Any gate write
# (state.json), a .prd or a .plugkit/config.toml opts it in (Workspace.opted_in).


def _pin_enforced(ctx: Context, root: str, mode: str) -> None:
    """Where the gates' mode meets a hook: from now on the client knows, without this runner,
    that `root` enforces, and fails closed there when no runner answers (plugkit/enforce_pins.py)."""
    if mode != "enforce":
        return
    try:
        if enforce_pins.pin(ctx.runtime.home, root):
            log.info("gates_enforce_pinned", root=root)
    except OSError as exc:
        log.warning("gates_enforce_pin_failed", root=root, error=exc.strerror or str(exc))


async def gate_decision(ctx: Context, p: HookPreToolParams) -> tuple[str, str]:
    gates = _gates(ctx, p)
    if gates is None:
        return "allow", ""
    try:
        ws = gates.workspace(p.session_id, p.cwd)
        if not ws.opted_in:
            return "allow", ""
        verdict, mode = await gates.check(ws, "PreToolUse", p.tool_name, dict(p.tool_input), p.platform)
        _pin_enforced(ctx, ws.root, mode)
    except Refused as exc:
        # A gate that cannot read its workspace must not stop every tool call of the agent.
        return "allow", f"plugkit gates could not check this call ({exc.message}); it was allowed"
    return verdict.decision, verdict.reason


async def gate_stop(ctx: Context, p: HookStopParams) -> tuple[bool, str]:
    gates = _gates(ctx, p)
    if gates is None:
        return False, ""
    try:
        ws = gates.workspace(p.session_id, p.cwd)
        if not ws.opted_in:
            return False, ""
        verdict, mode = await gates.stop(ws, p.stop_hook_active)
        _pin_enforced(ctx, ws.root, mode)
    except Refused as exc:
        return False, f"plugkit gates could not check whether the work is done ({exc.message})"
    return verdict.block, verdict.reason


async def gate_lines(ctx: Context, p: HookSessionParams) -> list[str]:
    gates = _gates(ctx, p)
    if gates is None:
        return []
    try:
        ws = gates.workspace(p.session_id, p.cwd)
        return list(await gates.context(ws)) if ws.opted_in else []
    except Refused:
        return []


# --- the status a session is shown ----------------------------------------------------------

def _task_lines(ctx: Context, p: HookSessionParams) -> list[str]:
    """This session's unfinished tasks. No durations: the text must only change when the
    state does, or UserPromptSubmit would re-inject it on every prompt."""
    live = [t for t in ctx.tasks.list_tasks(p.session_id, p.cwd) if t.state in LIVE_STATES]
    if not live:
        return []
    lines = [f"plugkit: {len(live)} task(s) of this session still running (exec:status task_N shows "
             "their output):"]
    for t in live[:MAX_TASK_LINES]:
        lines.append(f"  task_{t.id} {t.state} ({t.lang}{f', pid {t.pid}' if t.pid else ''})")
    if len(live) > MAX_TASK_LINES:
        lines.append(f"  ... and {len(live) - MAX_TASK_LINES} more (exec:tasks lists them)")
    return lines


async def _status(ctx: Context, p: HookSessionParams) -> list[str]:
    worker = _worker(ctx, p)
    if worker is not None:  # a `plugkit work` worker: its item is its plan, the runner its verifier
        return _task_lines(ctx, p) + _work_hooks().context_lines(worker[0])
    return _task_lines(ctx, p) + await gate_lines(ctx, _gated(ctx, p))


async def _memory_index(ctx: Context, p: HookSessionParams) -> list[str]:
    if not os.path.isdir(p.cwd):
        return []
    try:
        text = await asyncio.to_thread(index_for_context, p.cwd, ctx.runtime.home, MAX_MEMORY_LINES,
                                       MAX_MEMORY_BYTES)
    except (OSError, ValueError) as exc:
        log.warning("hook_memory_index_failed", error=exc.__class__.__name__)
        return []
    return text.splitlines()


async def _digest(ctx: Context, p: HookSessionParams) -> list[str]:
    """The project digest when the workspace opts in (`digest_at_start = true` in
    .plugkit/config.toml); cached by the search manager until a manifest or HEAD changes."""
    root = root_or_none(p.cwd) if os.path.isdir(p.cwd) else None
    if root is None or not config_mod.load(os.path.join(root, ".plugkit", "config.toml")).digest_at_start:
        return []
    manager = ctx.search_manager()  # built on the event loop (Lazy is not thread-safe)
    try:
        _root, text, _cached = await asyncio.to_thread(manager.digest, p.cwd)
    except (OSError, ValueError, NotAWorkspace) as exc:
        log.warning("hook_digest_failed", error=exc.__class__.__name__)
        return []
    return text.splitlines()


# --- the methods ------------------------------------------------------------------------------

@rpc(HookSessionStartParams)
async def session_start(ctx: Context, p: HookSessionStartParams) -> HookContext:
    """hook.session_start {session_id, cwd, worker_session?, platform?, source?} -> {context}

    Registers the session and returns the short context for the model: how to run code,
    this session's running tasks, the gates' lines (phase, unknowns, next step) and the
    memory index; at most 40 lines. Then, when the workspace opts in (digest_at_start), the
    project digest (~900 tokens at most). Example: {"method":"hook.session_start","params":
    {"session_id":"5f1c","cwd":"/w","platform":"claude-code","source":"startup"}}
    """
    log.info("hook_session_start", session_id=p.session_id, cwd=p.cwd, platform=p.platform, source=p.source)
    return HookContext(context=await _start(ctx, p))


async def _start(ctx: Context, p: HookSessionParams) -> str:
    key = _key(p)
    if os.path.isdir(p.cwd):
        ctx.tasks.open_session(p.session_id, p.cwd)
    status = await _status(ctx, p)
    ctx.hooks.remember_sent(key, "\n".join(status))
    lines = [USAGE_LINE, SEARCH_LINE, *status, *await _memory_index(ctx, p)]
    # The digest has its own bound (~900 tokens), so the lines' cap never cuts it in half.
    return "\n".join(lines[:MAX_CONTEXT_LINES] + await _digest(ctx, p))


@rpc(HookSessionParams)
async def prompt(ctx: Context, p: HookSessionParams) -> HookPromptResult:
    """hook.prompt {session_id, cwd, worker_session?} -> {context, changed}

    The same status as session_start (running tasks, gate lines), but only when it differs
    from the last one this session was given; else context "" and changed false. A session
    never started gets session_start's whole context on its first prompt: Qwen Code fires
    no SessionStart headless (`qwen -p`), and a SessionStart that found no runner is lost.
    """
    key, memory = _key(p), ctx.hooks
    if not memory.started(key):
        log.info("hook_session_start", session_id=p.session_id, cwd=p.cwd, source="first prompt")
        return HookPromptResult(context=await _start(ctx, p), changed=True)
    status = "\n".join(await _status(ctx, p))
    if status == memory.sent(key):
        return HookPromptResult(context="", changed=False)
    memory.remember_sent(key, status)
    return HookPromptResult(context=status or "plugkit: no task of this session is running now.", changed=True)


@rpc(HookPreToolParams)
async def pre_tool(ctx: Context, p: HookPreToolParams) -> HookDecision:
    """hook.pre_tool {session_id, cwd, worker_session?, tool_name?, tool_input?, platform?}
    -> {decision: allow|deny|ask, reason}

    The gates' answer for this tool call (allow with an empty reason when no gates are
    registered). An allow may carry a reason: a warning for the model (advisory gates).
    `exec:` commands reach this method only when they mention approving (the client runs
    the rest itself). `platform` says whether the host can show the person a permission
    prompt (claude-code, qwen): an approval the person confirms there is then accepted.
    """
    worker = _worker(ctx, p)
    if worker is not None:
        # A spent budget stops the worker here, at its next tool call (runner/core/work/budget.py).
        manager = ctx.work.peek() if ctx.work is not None else None
        spent = manager.budget_stop(worker[0]) if manager is not None else None
        decision, reason = ("deny", spent) if spent else _work_hooks().pre_tool(worker[0], p.cwd, p.tool_name,
                                                                                dict(p.tool_input))
        journal = ctx.journal_of(worker[0])
        if journal is not None:  # the attempt's trace: every tool call its hooks reported, and the answer
            journal.tool(worker[0], p.tool_name or "?", _work_hooks().summary(dict(p.tool_input)), decision, reason)
    else:
        decision, reason = await gate_decision(ctx, _gated(ctx, p))
    return HookDecision(decision=decision, reason=reason)  # type: ignore[arg-type]


@rpc(HookStopParams)
async def stop(ctx: Context, p: HookStopParams) -> HookStopResult:
    """hook.stop {session_id, cwd, worker_session?, stop_hook_active?} -> {block, reason}

    Whether the agent may stop (the gates decide). Loop guard: when stop_hook_active is true
    (the agent is already continuing because of a block) and the reason is the one this
    session was last blocked with, it is not blocked again; reason then says why it stops
    anyway. A non-blocking answer may carry a reason for the person (advisory gates).
    """
    key, memory = _key(p), ctx.hooks
    worker = _worker(ctx, p)
    manager = ctx.work.peek() if ctx.work is not None else None
    if worker is not None and manager is not None and manager.budget_stop(worker[0], end=False):
        block, reason = False, ""  # a spent budget: turning it back to commit would spend more; it ends as it is
    elif worker is not None:
        block, reason = await _work_hooks().stop(*worker)
    else:
        block, reason = await gate_stop(ctx, _gated(ctx, p))
    if block and p.stop_hook_active and memory.last_block(key) == reason:
        block, reason = False, "plugkit: letting the agent stop (it was already told once): " + reason
    memory.remember_block(key, reason if block else None)
    return HookStopResult(block=block, reason=reason)


@rpc(HookSessionParams)
async def session_end(ctx: Context, p: HookSessionParams) -> HookSessionEnded:
    """hook.session_end {session_id, cwd, worker_session?} -> {killed: [task ids]}

    Ends the session: its running tasks are killed (whole trees), its browser page and
    serial ports released, its tasks forgotten; a task started with detach runs on (and
    keeps what it uses). An unknown session ends with nothing killed.
    """
    ctx.hooks.forget(_key(p))
    _worker(ctx, p)  # a heartbeat
    killed = await ctx.tasks.end_session(p.session_id, p.cwd)
    gates = ctx.gates.peek() if ctx.gates is not None else None  # gates not open yet: nothing to sign
    if gates is not None:
        await gates.seal_ledger("session ended")  # the gate ledger's head signed at each session's end
    return HookSessionEnded(killed=killed)


METHODS = {
    "hook.session_start": session_start, "hook.prompt": prompt, "hook.pre_tool": pre_tool,
    "hook.stop": stop, "hook.session_end": session_end,
}
