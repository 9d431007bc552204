"""work.* — the runner drives coding agents as workers through the `.prd` (plugkit work).

A run belongs to the workspace of cwd; one live run per workspace. Each ready item gets a
worker (a task of its own session) in its own git worktree on branch plugkit/<item>; when
the worker stops the runner runs the item's verify command there, and only a green check
on committed work lands the branch and completes the item with a receipt.
Errors: -32602 bad params or no verify command, -32001 no run / no such item, -32005 a
run already live (or not a git repo on a branch).
"""

from plugkit.protocol.work import (
    WorkEvent, WorkEvents, WorkEventsParams, WorkItemParams, WorkLogs, WorkLogsParams, WorkParams, WorkRolledBack,
    WorkResumeParams, WorkRunItemParams, WorkRuns, WorkRunsParams, WorkRunSummary, WorkStartParams, WorkStatus,
    WorkStatusParams,
)
from plugkit.refusals import Invalid, NotFound
from runner.core.work.model import RunRequest
from runner.rpc.context import PEER
from runner.rpc.dispatch import Context, rpc
from runner.rpc import work_host
from runner.rpc.shapes import work_run


@rpc(WorkStartParams)
async def start(ctx: Context, p: WorkStartParams) -> WorkStatus:
    """work.start {session_id, cwd, parallel?=3, items?, worker?=claude-code, run?, afk?, budget_min?,
    budget_tokens?, budget_cost?, item_budget_tokens?, item_budget_cost?, item_budget_min?, budget_day_tokens?,
    budget_day_cost?, stall_min?=10.0, merge?, env?, sandbox?=true, network?, runtime?, cluster?, allow_remote_cluster?=false, quota_wait?=true}
    -> {run}

    Starts the run and returns at once (work.status follows it). `run` is the argv of
    worker "command" (the prompt arrives on its stdin); `env` is what the workers inherit,
    through their credential scopes (plugkit/work/scopes.py). sandbox=false is a person's
    --no-sandbox; with it true the sandbox self-test runs first and refuses the run if it fails.
    runtime "ray" places each worker on the Ray cluster at `cluster` (HOST:PORT; defaults: the
    workspace's work_runtime/work_cluster); Forbidden for a cluster neither loopback nor TLS
    unless allow_remote_cluster (a person's --allow-remote-cluster).
    network: plugkit.vocab.WORK_NETWORKS (default: the workspace's work_network); "loopback-model"
    needs the sandbox. quota_wait=false (--no-quota-wait): a worker stopped by its host's usage
    limit fails its attempt like any exit, instead of waiting for the reset (runner/core/work/quota.py).
    budget_tokens/budget_cost (the run's) and item_budget_tokens/item_budget_cost
    (each item's) are counted from the workers' own telemetry; a spent one pauses the run
    (work.resume); -32602 for a cost cap where the worker reports no cost. budget_day_tokens/
    budget_day_cost count the workspace's spend on the local day over every run (the lower of
    it and the workspace's work_day_tokens/work_day_cost holds); a run paused on one resumes by
    itself at local midnight.
    Example: {"method":"work.start","params":{"session_id":"s","cwd":"/w","worker":"command",
              "run":["python3","agent.py"],"afk":true}}
    """
    request = RunRequest(worker=p.worker, parallel=p.parallel, items=tuple(p.items),
                         command=tuple(p.run) if p.run else None, afk=p.afk, budget_min=p.budget_min,
                         stall_min=p.stall_min, merge=p.merge, env=dict(p.env or {}),
                         sandbox=p.sandbox, network=p.network, runtime=p.runtime, cluster=p.cluster,
                         allow_remote_cluster=p.allow_remote_cluster, quota_wait=p.quota_wait, caps=p.caps())
    run = await ctx.work_manager().start(p.session_id, p.cwd, request)
    return WorkStatus(run=work_run(run))


@rpc(WorkStatusParams)
async def status(ctx: Context, p: WorkStatusParams) -> WorkStatus:
    """work.status {session_id, cwd, wait_ms?=0, run?} -> {run: WorkRunInfo | null}

    The workspace's latest run (or the kept run `run`, an id or a unique prefix): its state
    (running | waiting | halted | done | stopped), `halt` (why it halted or waits: the line a
    person reads first), each item's state, reason, branch, worker task, last heartbeat, verify
    result and receipt. wait_ms waits until the run halts, waits for a person, or ends.
    Errors: -32001 no kept run `run`.
    """
    work = ctx.work_manager()
    root = work.root_of(p.session_id, p.cwd)
    run = work.find_run(root, p.run) if p.run else work.latest(root)
    if run is not None and p.wait_ms:
        await work.wait(run, p.wait_ms / 1000)
    return WorkStatus(run=work_run(run) if run is not None else None)


@rpc(WorkParams)
async def stop(ctx: Context, p: WorkParams) -> WorkStatus:
    """work.stop {session_id, cwd} -> {run}

    Ends every running worker (killed/stopped; their items go back to pending) and the run.
    """
    run = await ctx.work_manager().stop(p.session_id, p.cwd)
    return WorkStatus(run=work_run(run))


@rpc(WorkLogsParams)
async def logs(ctx: Context, p: WorkLogsParams) -> WorkLogs:
    """work.logs {session_id, cwd, item, run?, verify?, cursor?, max_bytes?, wait_ms?} -> {item, task_id,
    chunks, cursor, end, more, finished}

    The output of the item's latest worker task (verify: its latest verify run) from cursor
    (0 when omitted), in the latest run or the kept run `run`; wait_ms waits for output past
    cursor or the task's end. task_id null: no such task (never started, or its output is no
    longer kept by the runner).
    """
    work = ctx.work_manager()
    it = work.item(work.find_run(work.root_of(p.session_id, p.cwd), p.run), p.item)
    task_id = it.verify_task_id if p.verify else it.task_id
    task = await ctx.tasks.find(task_id) if task_id is not None else None
    if task is None:
        return WorkLogs(item=p.item, task_id=task_id)
    cursor = p.cursor or 0
    if p.wait_ms and not task.finished and task.buffer.end <= cursor:
        await ctx.tasks.wait(task, p.wait_ms / 1000, None, None, cursor)
    got = ctx.tasks.read(task, cursor, p.max_bytes)
    return WorkLogs(item=p.item, task_id=task.id, chunks=got.chunks, cursor=got.cursor, end=task.buffer.end,
                    more=got.more, finished=task.finished)


@rpc(WorkRunItemParams)
async def rollback(ctx: Context, p: WorkItemParams) -> WorkRolledBack:
    """work.rollback {session_id, cwd, item, run?} -> {item, head, how}

    Undoes a landed high or critical item (of the latest run, or of the kept run `run`) from
    the tag set before it landed: a reset when nothing landed after it, else a revert of its
    commits. The item goes back to pending.
    """
    head, how = await ctx.work_manager().rollback(p.session_id, p.cwd, p.item, p.run)
    return WorkRolledBack(item=p.item, head=head, how=how)


@rpc(WorkItemParams)
async def allow_check(ctx: Context, p: WorkItemParams) -> WorkStatus:
    """work.allow_check {session_id, cwd, item} -> {run}

    A person lets the item's branch change the files of its own check (an item whose branch
    does is held blocked/touches_check with the diff); kept until the item lands. Judged by
    the caller's process ancestry like approval.grant. Errors: -32002 the caller is a worker,
    a task or an agent; -32001 no run yet or no such item.
    """
    run = await ctx.work_manager().allow_check(p.session_id, p.cwd, p.item, PEER.get(), ctx.runtime.port,
                                               ctx.runtime.pid)
    return WorkStatus(run=work_run(run))


@rpc(WorkResumeParams)
async def resume(ctx: Context, p: WorkResumeParams) -> WorkStatus:
    """work.resume {session_id, cwd, budget_tokens?, budget_cost?, item_budget_tokens?, item_budget_cost?, item_budget_min?,
    budget_day_tokens?, budget_day_cost?} -> {run}

    A person raises the caps of a run paused on a spent budget (or sets caps on a live run): the
    run goes on, each paused item's next attempt continuing in the worktree it left (its
    uncommitted work kept) on its kept branch. Judged by the
    caller's process ancestry like approval.grant. Errors: -32002 the caller is a worker, a task
    or an agent; -32005 the run is not live, not paused, or a cap is still spent; -32602 a cap
    that cannot be held (a cost cap where the worker reports no cost).
    """
    run = await ctx.work_manager().resume_budget(p.session_id, p.cwd, p.caps(), PEER.get(), ctx.runtime.port,
                                                 ctx.runtime.pid)
    return WorkStatus(run=work_run(run))


@rpc(WorkRunsParams)
async def runs(ctx: Context, p: WorkRunsParams) -> WorkRuns:
    """work.runs {session_id, cwd, limit?=20} -> {runs: [{id, state, halt, worker, started_at, ended_at,
    items: {state: n}, landed}]}

    The workspace's kept runs, newest first (the runner keeps the last 50 per workspace).
    """
    work = ctx.work_manager()
    out = []
    root = work.root_of(p.session_id, p.cwd)
    for run in work.past.kept(root, work.latest(root), p.limit):
        counts: dict[str, int] = {}
        for it in run.items.values():
            counts[it.state] = counts.get(it.state, 0) + 1
        out.append(WorkRunSummary(id=run.id, state=run.state, halt=run.halt, worker=run.worker,
                                  started_at=run.started_at, ended_at=run.ended_at, items=counts,
                                  landed=[i.id for i in run.items.values() if i.landed]))
    return WorkRuns(runs=out)


@rpc(WorkEventsParams)
async def events(ctx: Context, p: WorkEventsParams) -> WorkEvents:
    """work.events {session_id, cwd, run?, after?=0, item?, attempt?, limit?=200, wait_ms?=0} -> {run,
    started_at, state, ended, events: [{seq, t, item, attempt, kind, text}], seq, skipped, tools_left_out}

    The run's journal past event `after` (the latest run, or the kept run `run`): item events
    (worker started, exited, check green/red, landed, held and why), the run's state, and per
    attempt its first heartbeat, every tool call its hooks reported (allowed/denied and why),
    every exec: task and refused call. `item` narrows it to one attempt's trace: `attempt`, else
    the item's latest. Errors: -32001 no kept run `run`, no such item in it; -32602 no such attempt.
    wait_ms waits for an event past `after` while the run is live. What `plugkit work --wait`,
    `work status --follow` and `work trace` print.
    """
    work = ctx.work_manager()
    root = work.root_of(p.session_id, p.cwd)
    try:
        run = work.find_run(root, p.run)
    except NotFound:
        if p.run is not None:
            raise
        return WorkEvents()
    attempt = p.attempt
    if p.item is not None:
        tries = max(1, work.item(run, p.item).attempt)
        if attempt is not None and attempt > tries:
            raise Invalid(f"{p.item} has {tries} attempt(s) in run {run.id}: --attempt 1..{tries}")
        attempt = attempt or tries
    journal = work.journal(run)
    live = run.ended_at is None and work.drivers.get(root) is not None and work.latest(root) is run
    if live:
        journal.observe(run)
        if p.wait_ms and journal.seq <= p.after:
            await journal.wait(p.after, p.wait_ms / 1000)
    got = journal.since(p.after, p.item, attempt)
    kept = got[-p.limit:]
    fields = WorkEvent.model_fields
    return WorkEvents(run=run.id, started_at=run.started_at, state=run.state, ended=run.ended_at is not None,
                      attempt=attempt,
                      events=[WorkEvent(**{k: v for k, v in ev.items() if k in fields}) for ev in kept],
                      seq=journal.seq, skipped=len(got) - len(kept),
                      tools_left_out=journal.tools_left_out(p.item, attempt) if p.item and attempt else 0)


METHODS = {"work.start": start, "work.status": status, "work.stop": stop, "work.logs": logs,
           "work.runs": runs, "work.events": events,
           "work.rollback": rollback, "work.allow_check": allow_check, "work.resume": resume,
           **work_host.METHODS}  # a node's runner hosting a remote supervisor's attempts
