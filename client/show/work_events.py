"""How a run's journal reads (the runner's `work.events`): one line per event with its time
since the run started, an attempt's trace led by what the worker did last, and the kept runs."""

import time

MAX_TRACE = 40  # trace lines shown by default, the newest; --all shows every kept one


def stamp(ev: dict, t0: float | None) -> str:
    return f"+{max(0.0, ev['t'] - (t0 or ev['t'])):6.1f}s"


def event_line(ev: dict, t0: float | None) -> str:
    who = ev["item"] if ev.get("item") else "run"
    text = ev["text"][4:] if not ev.get("item") and ev["text"].startswith("run ") else ev["text"]
    return f"{stamp(ev, t0)}  {who:<8} {text}"


def trace_lines(item: dict, r: dict, attempt: int, show_all: bool) -> list[str]:
    """An attempt's trace: first the one line a person asks for (what it did last), then its events."""
    events = r["events"]
    t0 = r.get("started_at")
    state = item["state"] + (f"/{item['reason']}" if item.get("reason") else "")
    head = f"{item['id']}: attempt {attempt} of {max(item.get('attempt') or 0, attempt)} in run {r['run']}, {state}"
    if events:
        last = events[-1]
        head += f"; last: {last['text']} ({stamp(last, t0).strip()})"
    else:
        head += "; nothing recorded for this attempt" + ("" if item.get("attempt") else " (it never started)")
    lines = [head]
    shown = events if show_all else events[-MAX_TRACE:]
    hidden = len(events) - len(shown) + r.get("skipped", 0)
    if hidden:
        lines.append(f"  ... {hidden} earlier event(s) (--all shows them)")
    lines += [f"  {stamp(ev, t0)}  {ev['kind']:<7} {ev['text']}" for ev in shown]
    if r.get("tools_left_out"):
        lines.append(f"  ({r['tools_left_out']} more tool call(s) past the journal's bound were counted, not kept)")
    return lines


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _took(run: dict) -> str:
    end = run.get("ended_at") or time.time()
    s = max(0.0, end - run["started_at"])
    return f"{s:.0f}s" if s < 120 else f"{s / 60:.0f}m" if s < 7200 else f"{s / 3600:.1f}h"


def runs_lines(runs: list[dict]) -> list[str]:
    if not runs:
        return ["no plugkit work run in this workspace yet; `plugkit work --help` shows how to start one"]
    lines = []
    for run in runs:
        counts = ", ".join(f"{state} {n}" for state, n in sorted(run["items"].items()))
        line = (f"run {run['id']}  {run['state']:<8} {_when(run['started_at'])}  {_took(run):>5}  "
                f"{run['worker']:<12} {counts or 'no items'}")
        if run.get("landed"):
            line += f"; landed {' '.join(run['landed'][:8])}" + (" ..." if len(run["landed"]) > 8 else "")
        if run.get("halt") and run["state"] != "done":
            line += f"\n      {run['halt'][:160]}"
        lines.append(line)
    lines.append("next: plugkit work status RUN | plugkit work trace ITEM --run RUN | plugkit work logs ITEM --run RUN")
    return lines
