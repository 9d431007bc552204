"""What the page shows, as JSON (/api/v1/...): read from the runner's parts, never changing
them. Nothing here builds a part that was not built (a runner that never ran `plugkit work`
shows no runs), and nothing carries a person's authority."""

import time
from typing import Any

from plugkit.lifecycle.phases import FORWARD_FROM
from runner.rpc.context import Context
from runner.rpc.shapes import conditions, work_run

TAIL_BYTES = 2000
API_VERSION = 1


def _usage(task: Any) -> dict:
    probe = task.usage_probe
    if probe is None:
        return {"cpu_s": None, "memory_peak_bytes": None}
    try:
        usage = probe()
    except Exception:  # a cgroup gone with its task: unknown, not an error page
        return {"cpu_s": None, "memory_peak_bytes": None}
    return {"cpu_s": getattr(usage, "cpu_s", None), "memory_peak_bytes": getattr(usage, "memory_peak_bytes", None)}


def _tail(task: Any) -> str:
    buffer = task.buffer
    got = buffer.read(max(buffer.start, buffer.end - TAIL_BYTES), TAIL_BYTES)
    return "".join(text for _stream, text in got.chunks)


def _roles(ctx: Context) -> dict[int, str]:
    """task id -> what it is to a `plugkit work` run ("worker of w1", "check of w1"): the
    runner keeps no task's code, so this is how a person tells tasks apart."""
    manager = _work(ctx)
    roles: dict[int, str] = {}
    for run in ([] if manager is None else manager.runs.values()):
        for it in run.items.values():
            if it.task_id is not None:
                roles[it.task_id] = f"worker of {it.id}"
            if it.verify_task_id is not None:
                roles[it.verify_task_id] = f"check of {it.id}"
    return roles


def tasks(ctx: Context) -> dict:
    rows, roles = [], _roles(ctx)
    for t in ctx.tasks.all_tasks():
        rows.append({"role": roles.get(t.id), "task_id": t.id, "session_id": t.session.session_id, "workspace": t.session.root,
                     "cwd": t.cwd, "lang": t.lang, "state": t.state, "pid": t.pid, "detached": t.detached,
                     "started_at": t.started_at, "ended_at": t.ended_at, "exit_code": t.exit_code,
                     "reason": t.reason, "message": t.message, "bytes_out": t.bytes_out,
                     **_usage(t), "tail": _tail(t)})
    rows.sort(key=lambda r: (r["ended_at"] is not None, -r["task_id"]))  # running first, newest first
    return {"tasks": rows}


def sessions(ctx: Context) -> dict:
    return {"sessions": ctx.tasks.snapshot()["sessions"]}


def _work(ctx: Context):
    return ctx.work.peek() if ctx.work is not None else None


def work(ctx: Context) -> dict:
    """Each workspace's latest run, with every item (state, attempts, worker task, heartbeat,
    check and receipt, landed sha, why held, refused actions)."""
    manager = _work(ctx)
    runs = [] if manager is None else list(manager.runs.values())
    return {"runs": [_with_journal(manager, r) for r in sorted(runs, key=lambda r: -r.started_at)]}


JOURNAL_SHOWN = 30  # the run's newest events on the page (`plugkit work trace` has the rest)


def _with_journal(manager: Any, run: Any) -> dict:
    """The run as the wire has it, plus its newest journal events and each item's last one: what
    its worker did last, the line a person looks for."""
    shown = work_run(run).model_dump(mode="json")
    events = manager.journal(run).events
    shown["journal"] = [{k: ev[k] for k in ("seq", "t", "item", "attempt", "kind", "text")}
                        for ev in events[-JOURNAL_SHOWN:]]
    last: dict[str, str] = {}
    for ev in reversed(events):
        if ev["item"] and ev["item"] not in last:
            last[ev["item"]] = ev["text"]
        if len(last) == len(run.items):
            break
    for item in shown["items"]:
        item["last"] = last.get(item["id"])
    return shown


def _roots(ctx: Context) -> dict[str, str]:
    """workspace root -> a session id there (gate status is asked as a session)."""
    roots = {s.key.root: s.key.session_id for s in ctx.tasks.sessions()}
    manager = _work(ctx)
    for run in ([] if manager is None else manager.runs.values()):
        roots.setdefault(run.workspace, "plugkit-ui")
        for it in run.items.values():  # a worker's worktree is its item's, shown on the board
            roots.pop(it.worktree or "", None)
    return roots


async def gates(ctx: Context) -> dict:
    if ctx.gates is None:
        return {"workspaces": []}
    manager = ctx.gates.get()
    rows = []
    for root, session_id in sorted(_roots(ctx).items()):
        try:
            ws = manager.workspace(session_id, root)
        except Exception:  # no .prd there (not a gated workspace) or gone: nothing to show
            continue
        st, cfg, checks = await manager.status(ws)
        rows.append({"workspace": ws.root, "mode": cfg.mode, "phase": st.phase, "entered_at": st.entered_at,
                     "next_phase": FORWARD_FROM[st.phase].target,
                     "conditions": [c.model_dump(mode="json") for c in conditions(checks)],
                     "notices": list(st.notices) + list(cfg.problems)})
    return {"workspaces": rows}


def runner(ctx: Context) -> dict:
    rt = ctx.runtime
    return {"pid": rt.pid, "version": rt.version, "port": rt.port, "uptime_s": round(rt.uptime(), 1),
            "api": API_VERSION, "now": time.time()}


READERS = {"tasks": tasks, "sessions": sessions, "work": work, "runner": runner}
ASYNC_READERS = {"gates": gates}
