"""How `plugkit work` answers read: the run's state first (why it halted or waits), then
one line per item, bounded, then the next command."""

import time

from client.show.budget import budget_lines
from plugkit.work import events as work_events
from plugkit.work.events import retry_hint

MAX_ITEMS = 12
DIFF_LINES = 12
QUEUE_SHOWN = 6  # landing-queue entries in `work status` (the page and --json have the run's kept ones)


def _ago(ts: float | None) -> str:
    if not ts:
        return ""
    s = max(0.0, time.time() - ts)
    return f"{s:.0f} s ago" if s < 120 else f"{s / 60:.0f} min ago"


def item_line(it: dict) -> str:
    word = it["state"] + (f"/{it['reason']}" if it.get("reason") and it["state"] != "waiting" else "")
    parts = [f"  {it['id']:<8} {word:<24}"]
    if it.get("task_id") is not None and it["state"] in ("running", "spawning"):
        parts.append(f"task_{it['task_id']}, heartbeat {_ago(it.get('last_beat_at'))}")
    if it.get("verify"):
        parts.append(f"verify {it['verify']}")
    if it.get("landed"):
        parts.append(f"landed {it['landed'][:12]}")
    if it.get("receipt"):
        parts.append(f"receipt {it['receipt'][:12]}")
    if it.get("attempt", 0) > 1:
        parts.append(f"attempt {it['attempt']}")
    if it.get("evictions"):
        parts.append(f"evicted {it['evictions']}x from the landing queue")
    if it.get("node"):
        parts.append(f"node {it['node']}")
    if it.get("ports"):
        parts.append(f"ports {it['ports']}")
    if it.get("tokens") or it.get("cost"):
        parts.append(f"spent {it.get('tokens', 0)} tokens" + (f", ${it['cost']:.4f}" if it.get("cost") else ""))
    line = "  ".join(p for p in parts if p)
    if it.get("message") and it["state"] not in ("running", "completed"):
        first, _, rest = it["message"].partition("\n")  # touches_check: the diff follows its line
        line += f"\n           {first[:200]}"
        diff = rest.splitlines()
        line += "".join(f"\n             {d[:160]}" for d in diff[:DIFF_LINES])
        if len(diff) > DIFF_LINES:
            line += f"\n             ... {len(diff) - DIFF_LINES} more lines (`plugkit work status --json`)"
    hint = retry_hint(it)
    if hint:
        line += f"\n           next: {hint}"
    if it.get("teardown") and it["state"] not in ("running", "spawning", "verifying", "landing"):
        line += f"\n           {it['teardown'][:300]}"  # what its attempt's end tore down (issue 48 #3)
    if it.get("refused"):
        line += f"\n           refused {len(it['refused'])} call(s) on others' items: {it['refused'][-1][:160]}"
    return line


def run_lines(run: dict | None) -> list[str]:
    if run is None:
        return ["no plugkit work run in this workspace yet; `plugkit work --help` shows how to start one"]
    head = f"run {run['id']} {run['state']}"
    if run.get("halt"):
        head += f": {run['halt']}"
    lines = [head, f"  worker {run['worker']}, parallel {run['parallel']}{', afk' if run['afk'] else ''}, "
                   f"lands on {run['branch']} ({run['merge']}), "
                   + ("sandboxed (bwrap)" if run.get("sandbox", True) else "NO SANDBOX (--no-sandbox)")
                   + (", network: loopback + model endpoints" if run.get("network") == "loopback-model" else "")
                   + ("" if run.get("quota_wait", True) else ", no wait on a usage limit (--no-quota-wait)")]
    if run.get("runtime") == "ray":
        lines.append(f"  workers on the Ray cluster at {run.get('cluster')}")
        for node, why in (run.get("refused_nodes") or {}).items():
            lines.append(f"  node {node} given no item: {why}")
    if run.get("scopes"):
        lines.append(f"  credentials: {'; '.join(run['scopes'])}")
    lines += budget_lines(run)
    items = run["items"]
    lines += [item_line(it) for it in items[:MAX_ITEMS]]
    if len(items) > MAX_ITEMS:
        lines.append(f"  ... and {len(items) - MAX_ITEMS} more (`plugkit work status --json`)")
    lines += queue_lines(run)
    if run["state"] in ("running", "waiting", "halted") and run.get("ended_at") is None:
        lines.append("next: plugkit work status --wait 60 | plugkit work logs ITEM | plugkit work stop")
    return lines


def queue_lines(run: dict, shown: int = QUEUE_SHOWN) -> list[str]:
    """The landing queue (issue 48 #4): its latest entries, oldest green first, one line each;
    an eviction says why, and where its whole context is."""
    queue = run.get("queue") or []
    if not queue:
        return []
    lines = [f"  landing queue on {run['branch']} (in the order they went green"
             + (f"; {len(queue) - shown} earlier not shown" if len(queue) > shown else "") + "):"]
    for e in queue[-shown:]:
        line = f"    {e['item']:<8} {e['state']:<9} attempt {e['attempt']}, green {e['sha'][:12]}"
        if e.get("landed"):
            line += f", landed {e['landed'][:12]}"
        if e["state"] == "evicted" and e.get("note"):
            line += f"\n             {e['note'][:200]}"
            if e.get("context"):
                line += f" (`plugkit work status --json` has its {len(e['context'].splitlines())} lines of context)"
        lines.append(line)
    return lines


# Item states that ended without the item completing: `plugkit work --wait` exits 3 on them.
UNFINISHED = work_events.UNFINISHED


def wait_exit(run: dict | None) -> int:
    """0 when the run is done or still going; 3 when it halted or stopped, or an item ended unfinished."""
    if run is None:
        return 0
    if run["state"] in ("halted", "stopped", "paused") or any(i["state"] in UNFINISHED for i in run["items"]):
        return 3
    return 0


def never_started(item: str, what: str, it: dict | None, run: dict | None = None) -> str:
    """Why an item's worker (or verify run) has no output: the item's own state and reason."""
    if it is None:
        which = f"run {run['id']}" if run else "this run"
        return f"{item} is not in {which} (`plugkit work status` lists its items)"
    ran = it.get("verify_task_id" if what.startswith("verify") else "task_id")
    if ran is not None:  # it ran, but the runner no longer keeps that task's output
        return (f"{item}'s {what} task_{ran} is no longer kept by the runner (its output went with "
                f"an earlier runner or was closed); `plugkit work trace {item}` shows what it did")
    why = {"queued": "it is queued: waiting for its blockers or a free slot",
           "waiting": "it waits for a person's approval"}.get(it["state"], f"it is {it['state']}"
                                                                             f"{'/' + it['reason'] if it.get('reason') else ''}")
    line = f"{item} has not started a {what}: {why}"
    if it.get("message"):
        line += f" ({it['message'].splitlines()[0][:200]})"
    return line
