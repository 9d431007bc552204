"""Phase operations on one workspace: status, advance, retreat, emission, verify, stop.

Synchronous (the runner calls them in a worker thread); state and items come from the
runner's ledger when the workspace carries one (plugkit.lifecycle.authority), else from
the workspace's files. What only the runner can witness — running tasks, git, a finished task's output — arrives as an
`External` or a `Witness`; everything else is read from the workspace's files at the
moment of the call.
"""

import os
from dataclasses import dataclass, field
from typing import Optional

from plugkit import confined
from plugkit.lifecycle import authority, evidence, mutables, prd, state as state_mod
from plugkit.lifecycle.config import GateConfig
from plugkit.lifecycle.errors import Conflict, Forbidden, Invalid
# note_item_added is the phase machine's (state.py needs it below gating): work.py still takes it here.
from plugkit.lifecycle.phases import (BACKWARD, FORWARD_FROM, Check, Facts, GitFacts, enter, evaluate,  # noqa: F401
                                      note_item_added)
from plugkit.lifecycle.state import CiRun, EmitDecl, State, Transition, VerifyRun
from plugkit.lifecycle.workspace import Workspace


@dataclass(frozen=True)
class External:
    running_tasks: tuple[int, ...] = ()
    git: GitFacts = field(default_factory=GitFacts)


@dataclass(frozen=True)
class Witnessed:
    """One finished task as the runner saw it: for the value, and for the receipt."""

    seen: mutables.Witness
    task: evidence.TaskWitness
    run: Optional[evidence.RunFacts] = None  # what a signed receipt binds (runner.core.gates.witness)


# A transaction's State is parsed anew for it and dropped once written back, so an operation
# hands it out as it is: a deep copy cost the size of the state (every mutable, 500 history
# rows) on each operation.


@dataclass(frozen=True)
class Advance:
    ok: bool
    state: State
    target: Optional[str]
    checks: list[Check]
    transition: Optional[Transition]


def load_items(ws: Workspace) -> list[prd.Item]:
    if ws.ledger is not None:
        return authority.load(ws).items
    try:
        with confined.open_beneath(ws.root, ws.prd_path) as fh:  # never through a link, never a FIFO
            return prd.parse(fh.read())
    except FileNotFoundError:
        return []


def _open_items(ws: Workspace) -> tuple[str, ...]:
    try:
        return tuple(i.id for i in prd.open_items(load_items(ws)))
    except Conflict as exc:  # an unreadable .prd cannot prove there is no open work
        return (f"(.prd unreadable: {exc.message})",)


def _mismatches(ws: Workspace, decls: list[EmitDecl]) -> tuple[str, ...]:
    out = []
    for d in decls:
        full = os.path.join(ws.root, d.path)
        try:
            digest = evidence.sha256_file(full, ws.root)
        except OSError:
            out.append(f"{d.path}: missing")
            continue
        if digest != d.sha256:
            out.append(f"{d.path}: content differs from what was declared")
    return tuple(out)


def verify_status(st: State, cfg: GateConfig, git: GitFacts) -> tuple[bool, str]:
    if not cfg.verify:
        return False, 'no verify command: set verify = "..." in .plugkit/config.toml'
    v = st.verify
    if v is None:
        return False, "not run in this VERIFY phase: plugkit gate verify"
    if v.outcome is None:
        return False, f"running: task_{v.task_id}"
    if v.outcome != "green":
        return False, f"{v.outcome}: {v.detail}"
    if git.repo and v.head != git.head:
        return False, f"stale: HEAD moved since task_{v.task_id} ran; run `plugkit gate verify` again"
    return True, f"green: task_{v.task_id}, receipt {v.receipt}"


def ci_status(st: State, cfg: GateConfig, git: GitFacts) -> tuple[bool, str]:
    """Whether COMPLETE's CI condition holds: `ci` unset, or the runner's own confirmation
    that CI is green on the commit HEAD is at now."""
    if not cfg.ci:
        return True, "not required (no ci in .plugkit/config.toml)"
    c = st.ci
    if c is None:
        return False, f"not confirmed ({cfg.ci}): plugkit gate ci"
    if c.sha != git.head:
        return False, f"stale: confirmed on {c.sha[:12]}, HEAD is {(git.head or '?')[:12]}; plugkit gate ci"
    if c.state == "green":
        return True, f"green on {c.sha[:12]} ({c.provider}: {c.note})"
    nxt = "plugkit gate ci --wait 600" if c.state == "pending" else "plugkit gate ci"
    return False, f"{c.state} on {c.sha[:12]} ({c.provider}: {c.note}); {nxt}"


def facts(ws: Workspace, st: State, cfg: GateConfig, ext: External) -> Facts:
    green, note = verify_status(st, cfg, ext.git)
    ci_green, ci_note = ci_status(st, cfg, ext.git)
    return Facts(
        plan_passes=st.plan_passes, last_pass_added=tuple(st.last_pass_added),
        unknown_mutables=tuple(st.unknown()),
        emission=None if st.emission is None else tuple(d.path for d in st.emission),
        emission_mismatches=_mismatches(ws, st.emission or []),
        open_items=_open_items(ws), running_tasks=ext.running_tasks, git=ext.git,
        verify_green=green, verify_note=note, new_work=tuple(st.new_work),
        tampered=tuple(f.text() for f in authority.findings(ws)), ci_green=ci_green, ci_note=ci_note)


def next_checks(ws: Workspace, st: State, cfg: GateConfig, ext: External) -> list[Check]:
    """The next row's conditions as an advance now would find them. In PLAN that advance is
    itself the declaration of the pass under way, so it is counted in: otherwise status
    shows "last_pass_added_nothing: ok" while the advance it invites is refused for it."""
    if st.phase == "PLAN":
        st = st.model_copy(update={"plan_passes": st.plan_passes + 1, "last_pass_added": list(st.plan_added)})
    return evaluate(FORWARD_FROM[st.phase], facts(ws, st, cfg, ext))


def advance(ws: Workspace, cfg: GateConfig, ext: External, to: Optional[str], now: float) -> Advance:
    with state_mod.transaction(ws) as st:
        row = FORWARD_FROM[st.phase]
        if to is not None and to != row.target:
            raise Conflict(f"no forward transition from {st.phase} to {to}; the next phase is {row.target}")
        if st.phase == "PLAN":
            # Asking to leave PLAN is the declaration that a planning pass is complete.
            st.plan_passes += 1
            st.last_pass_added, st.plan_added = st.plan_added, []
        checks = evaluate(row, facts(ws, st, cfg, ext))
        moved = enter(st, row.target, row.name, checks, now) if all(c.holds for c in checks) else None
        return Advance(moved is not None, st, row.target, checks, moved)


def retreat(ws: Workspace, trigger: str, reason: str, now: float, by_agent: bool = True) -> Transition:
    rule = BACKWARD.get(trigger)
    if rule is None:
        raise Invalid(f"unknown trigger {trigger!r}; one of {', '.join(t for t, r in BACKWARD.items() if r.agent_may)}")
    if by_agent and not rule.agent_may:
        raise Forbidden(f"{trigger} is recorded by the runner from what it witnessed, not named by an agent")
    with state_mod.transaction(ws) as st:
        if st.phase not in rule.sources:
            raise Conflict(f"{trigger} does not apply in {st.phase} (it applies in {', '.join(sorted(rule.sources))})")
        return enter(st, rule.target, trigger, [], now, reason)


def add_mutable(ws: Workspace, name: str, expected: Optional[str], description: str,
                now: float) -> tuple[mutables.Mutable, State, Optional[Transition]]:
    with state_mod.transaction(ws) as st:
        m = mutables.new(name, expected, description, st.mutables)
        st.mutables[name] = m
        moved = None
        if st.phase == "PLAN":
            st.plan_added.append(f"mutable {name}")
        else:
            moved = enter(st, "PLAN", "new_unknown", [Check("unknown_mutables", False, st.unknown())], now,
                          f"mutable {name} added")
            st.plan_added.append(f"mutable {name}")  # the new unknown is part of the next planning pass
        return m.model_copy(), st, moved


@dataclass(frozen=True)
class Resolution:
    mutable: mutables.Mutable
    outcome: mutables.Outcome
    attempt: mutables.Attempt
    receipt: evidence.Receipt
    state: State
    transition: Optional[Transition]


def resolve_mutable(ws: Workspace, name: str, w: Witnessed, line: Optional[int], regex: Optional[str],
                    now: float) -> Resolution:
    with state_mod.transaction(ws) as st:
        m = st.mutables.get(name)
        if m is None:
            raise Invalid(f"no mutable {name}; `plugkit mutable list` shows them")
        attempt = mutables.judge(m, w.seen, line, regex)
        receipt = evidence.record_output(ws, "task_output", w.seen.output.encode(), w.task,
                                         f"mutable:{name}", attempt.reason, now)
        outcome = mutables.apply(m, attempt, receipt.id)
        moved = None
        if outcome.retreat:
            rule = BACKWARD["unresolved_after_two_attempts"]
            moved = enter(st, rule.target, rule.trigger, [Check("attempts", False, outcome.attempts)], now,
                          f"mutable {name}: {attempt.reason}")
        return Resolution(m.model_copy(), outcome, attempt, receipt, st, moved)


def restore_views(ws: Workspace) -> list[str]:
    """gate.restore: the views written again from the runner's ledger; the edits dropped."""
    if ws.ledger is None:
        raise Conflict("only the runner keeps a ledger to restore the views from")
    with ws.locked():
        return [f.text() for f in authority.restore(ws)]


def declare_emission(ws: Workspace, files: list[tuple[str, str]]) -> State:
    with state_mod.transaction(ws) as st:
        if st.phase not in ("EXECUTE", "EMIT"):
            raise Conflict(f"emission is declared in EXECUTE or EMIT; the phase is {st.phase}")
        decls = {}
        for path, digest in files:
            rel = ws.inside(path)
            decls[rel] = EmitDecl(path=rel, sha256=digest)
        st.emission = list(decls.values())
        return st


def check_verify_start(ws: Workspace, cfg: GateConfig) -> State:
    st = state_mod.load(ws)
    if st.phase != "VERIFY":
        raise Conflict(f"the verify command runs in VERIFY; the phase is {st.phase}")
    if not cfg.verify:
        raise Conflict('no verify command: set verify = "..." in .plugkit/config.toml')
    if st.verify is not None and st.verify.outcome is None:
        raise Conflict(f"verify is already running as task_{st.verify.task_id}")
    return st


def record_verify_start(ws: Workspace, run: VerifyRun) -> None:
    with state_mod.transaction(ws) as st:
        if st.phase == "VERIFY":  # it left VERIFY meanwhile: the run no longer counts for anything
            st.verify = run


def settle_verify(ws: Workspace, w: Optional[Witnessed], now: float) -> None:
    """Record how the pending verify run ended (w None: the runner no longer knows the task)."""
    with state_mod.transaction(ws) as st:
        v = st.verify
        if v is None or v.outcome is not None or (w is not None and w.task.task_id != v.task_id):
            return
        if w is None:
            v.outcome, v.detail = "lost", f"task_{v.task_id} is no longer known to the runner"
            return
        green = w.seen.state == "completed" and w.seen.exit_code == 0
        v.outcome = "green" if green else "red"
        v.detail = f"task_{v.task_id} ended {w.seen.state} (exit code {w.seen.exit_code})"
        v.receipt = evidence.record_output(ws, "verify", w.seen.output.encode(), w.task, "verify",
                                           v.detail, now, head=v.head, run=w.run).id


def record_ci(ws: Workspace, run: CiRun) -> None:
    """The runner's own CI confirmation for a commit (runner/core/gates/ci.py), kept in the state."""
    with state_mod.transaction(ws) as st:
        st.ci = run
