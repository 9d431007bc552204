"""The answers the platform hooks need: PreToolUse (check), Stop (stop), SessionStart (context).

Read-mostly: check and context never write, so a hook firing on every tool call in a
directory that never used the gates leaves no `.plugkit/` behind. Stop writes only the
reason it blocked with, to keep the promise "never block twice in a row for the same
reason" across runner restarts.
"""

import time
from dataclasses import dataclass
from typing import Any

from plugkit.lifecycle import authority, config_pin, item_states, prd, state as state_mod
from plugkit.lifecycle.config import GateConfig
from plugkit.lifecycle.errors import Conflict
from plugkit.lifecycle.gating import External, facts, load_items
from plugkit.lifecycle.phases import ROW, evaluate
from plugkit.lifecycle.hook_policy import PRE_TOOL_EVENTS, Verdict, decide, soften, stop_reasons, view
from plugkit.lifecycle.workspace import Workspace

MAX_CONTEXT_LINES = 15


def check(ws: Workspace, cfg: GateConfig, event: str, tool_name: str, tool_input: dict[str, Any]) -> Verdict:
    if cfg.mode == "off" or event not in PRE_TOOL_EVENTS:
        return Verdict("allow", "")
    st = state_mod.load(ws)
    return soften(cfg.mode, decide(view(st.phase, st.unknown(), tool_name, tool_input)))


@dataclass(frozen=True)
class StopVerdict:
    block: bool
    reason: str
    missing: list[str]


def stop(ws: Workspace, cfg: GateConfig, ext: External, stop_hook_active: bool) -> StopVerdict:
    if cfg.mode == "off":
        return StopVerdict(False, "", [])
    st = state_mod.load(ws)
    checks = evaluate(ROW["verified_clean"], facts(ws, st, cfg, ext))
    # In COMPLETE the verify run was witnessed on the way in; what can still break is the rest.
    failing = [(c.name, c.value) for c in checks
               if not c.holds and not (st.phase == "COMPLETE" and c.name == "verify_green")]
    missing = stop_reasons(st.phase, failing)
    if not missing:
        if st.last_stop_reason is not None:
            with state_mod.transaction(ws) as s:
                s.last_stop_reason = None
        return StopVerdict(False, "", [])
    reason = "plugkit gates: not done yet: " + "; ".join(missing)
    if cfg.mode == "advisory":
        return StopVerdict(False, reason.replace("plugkit gates:", "plugkit gates (advisory):", 1), missing)
    if stop_hook_active and st.last_stop_reason == reason:
        # The agent already heard exactly this and tried to stop again: a second identical
        # block would only loop. Let it stop; the reason stays on record.
        return StopVerdict(False, "plugkit gates: stopping although " + "; ".join(missing), missing)
    with state_mod.transaction(ws) as s:
        s.last_stop_reason = reason
    return StopVerdict(True, reason, missing)


NEXT = {
    "PLAN": "plan: name unknowns (plugkit mutable add) and work (plugkit prd add); "
            "`plugkit gate advance` once a pass adds nothing new",
    "EXECUTE": "execute: resolve each unknown from a witnessed run (exec:..., then plugkit mutable resolve "
               "NAME TASK); files are written from EMIT on",
    "EMIT": "emit: write the files, declare them (plugkit gate emit FILE...), then plugkit gate advance",
    "VERIFY": "verify: plugkit gate verify, commit and push, then plugkit gate advance",
    "COMPLETE": "complete: plugkit prd add to start new work",
}


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def context_lines(ws: Workspace) -> list[str]:
    """At most MAX_CONTEXT_LINES lines for SessionStart/UserPromptSubmit; none when gates are off."""
    cfg = config_pin.effective(ws)  # the settings the runner holds, not what the file says now
    if cfg.mode == "off":
        return []
    st = state_mod.load(ws)
    since = time.strftime("%H:%M", time.localtime(st.entered_at)) if st.entered_at else "start"
    lines = [f"plugkit gates ({cfg.mode}): phase {st.phase} since {since}; workspace {ws.root}"]
    found = authority.findings(ws)
    for finding in found[:3]:
        lines.append(f"TAMPERED (edited outside plugkit, not believed): {_short(finding.text(), 120)}")
    if found:
        lines.append("  -> revert the edit, redo it through plugkit, or `plugkit gate restore`; "
                     "COMPLETE waits until then")
    unknown = st.unknown()
    if unknown:
        lines.append(f"unknown mutables ({len(unknown)}): {', '.join(unknown[:8])}"
                     + (" ..." if len(unknown) > 8 else ""))
    try:
        items = load_items(ws)
    except Conflict as exc:
        items = []
        lines.append(_short(exc.message, 140))
    wave = prd.ready(items, cfg.ready_limit)
    if wave:
        lines.append("ready now: " + "; ".join(f"{i.id} {_short(i.subject, 40)}" for i in wave))
    waiting = item_states.waiting_for_approval(items, st)
    for item in waiting[:3]:
        lines.append(f"needs a person's approval (critical): {item.id} {_short(item.subject)} "
                     f"-> the user runs `plugkit approve {item.id}`")
    open_items = prd.open_items(items)
    if open_items:
        lines.append(f"open work items: {len(open_items)} of {len(items)}")
    lines.append("next: " + NEXT[st.phase])
    lines += [f"notice: {_short(n, 140)}" for n in st.notices[-2:]]
    lines += [f"config: {_short(p, 140)}" for p in cfg.problems[:2]]
    return lines[:MAX_CONTEXT_LINES]
