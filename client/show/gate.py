"""A few plain lines per lifecycle result, for people and agents reading a terminal."""

import time

SHOWN = 10  # ids one line names before it counts the rest; also the items `prd list` shows per kind
ORDER = ("in_progress", "blocked", "pending", "completed")  # what `prd list` shows first when it must cut


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def _value(v: object, full: bool = False) -> str:
    if isinstance(v, list):
        return _ids(v, full) or "none"
    return str(v)


def _ids(v: list, full: bool, sep: str = ", ") -> str:
    """The first SHOWN, then a count: a 1,000-item .prd does not become a 1,000-id line."""
    if full or len(v) <= SHOWN:
        return sep.join(map(str, v))
    return sep.join(map(str, v[:SHOWN])) + f"{sep}... {len(v) - SHOWN} more"


def condition(c: dict, full: bool = False) -> str:
    return f"  {'ok ' if c['holds'] else 'NO '} {c['name']}: {_value(c['value'], full)}"


def transition(t: dict) -> str:
    why = f" ({t['reason']})" if t.get("reason") else ""
    return f"{_when(t['at'])}  {t['from_phase']} -> {t['to_phase']}  [{t['trigger']}]{why}"


def status(r: dict, full: bool = False) -> list[str]:
    lines = [f"phase {r['phase']} since {_when(r['entered_at'])} (gates {r['mode']}), workspace {r['workspace']}",
             f"to {r['next_phase']}:"] + [condition(c, full) for c in r["conditions"]]
    if r["unknown_mutables"]:
        lines.append(f"unknown mutables: {_ids(r['unknown_mutables'], full)}")
    if r["history"]:
        lines.append("recent transitions:")
        lines += ["  " + transition(t) for t in r["history"][-3:]]
    lines += [f"notice: {n}" for n in r["notices"]]
    lines += [f"TAMPERED (not believed): {t}" for t in r.get("tampered", [])]
    return lines


def advance(r: dict) -> list[str]:
    if r["ok"]:
        return [transition(r["transition"])]
    from plugkit.lifecycle.hints import NEXT

    lines = [f"still {r['phase']}: not every condition for {r['to']} holds"]
    steps = []
    for c in r["unmet"]:
        lines.append(condition(c))
        means, step = NEXT.get(c["name"], ("", ""))
        if means:
            lines.append(f"      ({means})")
        if step and step not in steps:
            steps.append(step)
    if steps:
        lines.append("next: " + "; ".join(steps))
    return lines


def verify(r: dict) -> list[str]:
    v, t = r["verify"], r["task"]
    outcome = v["outcome"] or f"still {t['state']} (plugkit exec:sleep task_{t['task_id']}, then plugkit gate status)"
    lines = [f"verify task_{t['task_id']}: {outcome}"]
    if v.get("detail"):
        lines.append(f"  {v['detail']}")
    if v.get("receipt"):
        lines.append(f"  receipt {v['receipt']}")
    return lines


def mutable(m: dict) -> str:
    value = f" = {m['value']!r}" if m["status"] == "KNOWN" else ""
    expected = f" (expected {m['expected']!r})" if m.get("expected") is not None else ""
    failed = f"; last failure: {m['last_failure']}" if m.get("last_failure") and m["status"] != "KNOWN" else ""
    return f"{m['name']}: {m['status']}{value}{expected}, attempts {m['attempts']}{failed}"



def with_transition(lines: list[str], r: dict) -> list[str]:
    """A result that moved the phase says so on an indented last line."""
    if r.get("transition"):
        lines.append("  " + transition(r["transition"]))
    return lines

def mutable_added(r: dict) -> list[str]:
    return with_transition([f"added {mutable(r['mutable'])}; phase {r['phase']}"], r)


def resolved(r: dict) -> list[str]:
    head = f"{mutable(r['mutable'])}  (receipt {r['receipt']})"
    lines = [head if r["known"] else f"not resolved: {r['reason']}", f"  phase {r['phase']}"]
    if not r["known"]:
        lines.insert(1, "  " + head)
    return with_transition(lines, r)


def item(i: dict) -> str:
    deps = f" blocked by {', '.join(i['blocked_by'])}" if i["blocked_by"] else ""
    approved = " (approved)" if i.get("approved") else ""
    return f"{i['id']:<6} {i['status']:<11} {i['risk']:<8}{approved} {i['subject']}{deps}"


def item_added(r: dict) -> list[str]:
    return with_transition([f"added {item(r['item'])}"], r)


def items(r: dict, full: bool = False, more: str = "") -> list[str]:
    """Every item when few (or full); else the first SHOWN of each status, in ORDER of
    interest, a count of the rest, and `more` (the command that lists all)."""
    all_items = r["items"]
    kept = all_items
    if not full and len(all_items) > 2 * SHOWN:
        picked = {id(i) for status in ORDER for i in [x for x in all_items if x["status"] == status][:SHOWN]}
        kept = [i for i in all_items if id(i) in picked]
    lines = [item(i) for i in kept] or ["no work items"]
    if len(kept) < len(all_items):
        left: dict[str, int] = {}
        shown_ids = {id(k) for k in kept}
        for i in all_items:
            if id(i) not in shown_ids:
                left[i["status"]] = left.get(i["status"], 0) + 1
        counts = ", ".join(f"{n} {status}" for status, n in left.items())
        lines.append(f"... {len(all_items) - len(kept)} more items ({counts}); {len(all_items)} in all"
                     + (f"; `{more}` lists them" if more else ""))
    waves = r["waves"]
    if waves:
        shown = waves if full else waves[:3]
        text = "  |  ".join(_ids(w, full, " ") for w in shown)
        if len(shown) < len(waves):
            text += f"  |  ... {len(waves) - len(shown)} more waves"
        lines.append(f"waves ({len(waves)}): " + text)
    return lines


def receipt(r: dict) -> str:
    what = r["path"] if r["kind"] == "file" else f"task_{(r.get('task') or {}).get('task_id')}"
    subject = f" for {r['subject']}" if r.get("subject") else ""
    return f"{r['id']}  {_when(r['created_at'])}  {r['kind']:<11} {what}{subject}"


def item_checked(r: dict) -> list[str]:
    at = f" at {r['head'][:12]}" if r.get("head") else ""
    done = (f"complete it: plugkit prd update {r['item_id']} --status completed --evidence {r['receipt']} "
            f"(or next time: plugkit prd verify {r['item_id']} --complete)"
            if r["outcome"] == "green" else f"fix it and run `plugkit prd verify {r['item_id']}` again")
    detail = r["detail"] if r["detail"].startswith(f"task_{r['task_id']}") else f"task_{r['task_id']} {r['detail']}"
    return [f"{r['item_id']}'s check {r['outcome']}{at}: {detail}; receipt {r['receipt']}", done]


def receipt_detail(r: dict) -> list[str]:
    lines = [receipt(r), f"  sha256 {r['sha256']} ({r['size']} bytes)"]
    if r.get("task"):
        t = r["task"]
        lines.append(f"  task_{t['task_id']} of session {t['session_id']} ({t['lang']}): {t['state']}, "
                     f"exit code {t['exit_code']}, code sha256 {t['code_sha256']}")
    if r.get("head"):
        lines.append(f"  run as a check at git HEAD {r['head']}")
    if r.get("note"):
        lines.append(f"  note: {r['note']}")
    return lines


def verified(r: dict) -> list[str]:
    lines = [f"{x['id']}  {'ok' if x['ok'] else 'MISMATCH: ' + '; '.join(x['problems'])}" for x in r["results"]]
    return lines + [f"{r['checked']} receipt(s) checked: {'all ok' if r['ok'] else 'mismatches found'}"]


def approvals(r: dict) -> list[str]:
    lines = [f"{a['item_id']}: approved by {a['user']} via {a['via']} at {_when(a['at'])}" for a in r["approvals"]]
    if r["waiting"]:
        lines.append(f"waiting for a person's approval: {', '.join(r['waiting'])}")
    return lines or ["no approvals, and no critical items waiting"]
