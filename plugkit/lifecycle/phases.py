"""The phase machine: PLAN -> EXECUTE -> EMIT -> VERIFY -> COMPLETE (-> PLAN).

Forward transitions are rows of FORWARD, each named, each a conjunction of named
conditions; a condition is a predicate over a Facts snapshot plus the value shown when
it is reported. Backward transitions are rows of BACKWARD, named by their trigger.
Adding a rule is adding a row. `enter` is the only way the phase changes: it appends
the transition (time, trigger, the conditions' values) to the history and resets what
the new phase must witness afresh.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from plugkit.lifecycle.model import Phase, State, Transition

PHASES: tuple[Phase, ...] = ("PLAN", "EXECUTE", "EMIT", "VERIFY", "COMPLETE")


@dataclass(frozen=True)
class GitFacts:
    repo: bool = False
    dirty: tuple[str, ...] = ()
    upstream: Optional[str] = None
    ahead: Optional[int] = 0  # None: an upstream is configured but gone, so unpushed is unknown
    head: Optional[str] = None
    error: Optional[str] = None  # git could not answer: the git conditions do not hold


@dataclass(frozen=True)
class Facts:
    """Everything a condition may look at, gathered once per evaluation."""

    plan_passes: int = 0
    last_pass_added: tuple[str, ...] = ()
    unknown_mutables: tuple[str, ...] = ()
    emission: Optional[tuple[str, ...]] = None  # declared paths; None: nothing declared
    emission_mismatches: tuple[str, ...] = ()
    open_items: tuple[str, ...] = ()
    running_tasks: tuple[int, ...] = ()
    git: GitFacts = field(default_factory=GitFacts)
    verify_green: bool = False
    verify_note: str = "not run"
    new_work: tuple[str, ...] = ()
    tampered: tuple[str, ...] = ()  # the views' outside edits (plugkit.lifecycle.authority)
    ci_green: bool = True  # `ci` unset, or the runner confirmed CI green on HEAD
    ci_note: str = "not required (no ci in .plugkit/config.toml)"


@dataclass(frozen=True)
class Condition:
    name: str
    holds: Callable[[Facts], bool]
    value: Callable[[Facts], Any]


def _git_value(f: Facts) -> Any:
    if f.git.error:
        return f.git.error
    return list(f.git.dirty) if f.git.repo else "not a git repository"


def _unpushed_value(f: Facts) -> Any:
    if f.git.error:
        return f.git.error
    if not f.git.repo or f.git.upstream is None:
        return "no upstream"
    if f.git.ahead is None:
        return f"upstream {f.git.upstream} is gone"
    return f"{f.git.ahead} commit(s) ahead of {f.git.upstream}"


CONDITIONS: dict[str, Condition] = {c.name: c for c in (
    Condition("plan_pass_declared", lambda f: f.plan_passes > 0, lambda f: f.plan_passes),
    Condition("last_pass_added_nothing", lambda f: not f.last_pass_added, lambda f: list(f.last_pass_added)),
    Condition("all_mutables_known", lambda f: not f.unknown_mutables, lambda f: list(f.unknown_mutables)),
    Condition("emission_declared", lambda f: f.emission is not None,
              lambda f: None if f.emission is None else list(f.emission)),
    Condition("emitted_files_match", lambda f: f.emission is not None and not f.emission_mismatches,
              lambda f: list(f.emission_mismatches)),
    Condition("no_open_work_items", lambda f: not f.open_items, lambda f: list(f.open_items)),
    Condition("no_unknown_mutables", lambda f: not f.unknown_mutables, lambda f: list(f.unknown_mutables)),
    Condition("no_running_tasks", lambda f: not f.running_tasks, lambda f: [f"task_{t}" for t in f.running_tasks]),
    Condition("git_clean", lambda f: f.git.error is None and not f.git.dirty, _git_value),
    Condition("nothing_unpushed", lambda f: f.git.error is None and (f.git.upstream is None or f.git.ahead == 0),
              _unpushed_value),
    Condition("verify_green", lambda f: f.verify_green, lambda f: f.verify_note),
    Condition("new_work_arrived", lambda f: bool(f.new_work), lambda f: list(f.new_work)),
    Condition("views_untampered", lambda f: not f.tampered, lambda f: list(f.tampered)),
    Condition("ci_green", lambda f: f.ci_green, lambda f: f.ci_note),
)}


@dataclass(frozen=True)
class Row:
    name: str
    source: Phase
    target: Phase
    conditions: tuple[str, ...]


FORWARD: tuple[Row, ...] = (
    Row("plan_settled", "PLAN", "EXECUTE", ("plan_pass_declared", "last_pass_added_nothing")),
    Row("unknowns_resolved", "EXECUTE", "EMIT", ("all_mutables_known",)),
    Row("emission_matches", "EMIT", "VERIFY", ("emission_declared", "emitted_files_match")),
    Row("verified_clean", "VERIFY", "COMPLETE", ("no_open_work_items", "no_unknown_mutables", "no_running_tasks",
                                                 "git_clean", "nothing_unpushed", "verify_green",
                                                 "views_untampered", "ci_green")),
    Row("new_work", "COMPLETE", "PLAN", ("new_work_arrived",)),
)
FORWARD_FROM: dict[str, Row] = {r.source: r for r in FORWARD}
ROW = {r.name: r for r in FORWARD}


@dataclass(frozen=True)
class Retreat:
    trigger: str
    sources: frozenset[str]
    target: Phase
    agent_may: bool  # may an agent name it in gate.retreat (the rest are the runner's findings)
    meaning: str


_AFTER_PLAN = frozenset(PHASES[1:])
BACKWARD: dict[str, Retreat] = {r.trigger: r for r in (
    Retreat("new_unknown", _AFTER_PLAN, "PLAN", True, "a new unknown appeared"),
    Retreat("unresolved_after_two_attempts", frozenset(PHASES), "PLAN", False,
            "a mutable failed two witnessed attempts"),
    Retreat("verify_failed_code", frozenset({"VERIFY"}), "EXECUTE", True, "verify failed: the code is wrong"),
    Retreat("verify_failed_emit", frozenset({"VERIFY"}), "EMIT", True,
            "verify failed: what was written is not what was meant"),
    Retreat("replan", _AFTER_PLAN, "PLAN", True, "the agent asked to plan again"),
)}


@dataclass(frozen=True)
class Check:
    name: str
    holds: bool
    value: Any


def evaluate(row: Row, facts: Facts) -> list[Check]:
    return [Check(n, CONDITIONS[n].holds(facts), CONDITIONS[n].value(facts)) for n in row.conditions]


# What entering a phase resets: whatever the new phase must witness afresh.
def _enter_plan(s: State) -> None:
    s.plan_passes, s.plan_added, s.last_pass_added = 0, [], []
    s.emission, s.verify = None, None


def _enter_verify(s: State) -> None:
    s.verify = None  # only a verify run started during this stay counts


def _enter_complete(s: State) -> None:
    s.new_work = []


ON_ENTER: dict[str, Callable[[State], None]] = {
    "PLAN": _enter_plan, "VERIFY": _enter_verify, "COMPLETE": _enter_complete,
}


def enter(state: State, target: Phase, trigger: str, checks: list[Check], now: float,
          reason: str = "") -> Transition:
    record = Transition(at=now, from_phase=state.phase, to_phase=target, trigger=trigger,
                        conditions={c.name: c.value for c in checks}, reason=reason)
    state.history.append(record)
    state.phase, state.entered_at = target, now
    state.last_stop_reason = None
    ON_ENTER.get(target, lambda s: None)(state)
    return record


def _new_work(st: State, label: str, now: float) -> Optional[Transition]:
    """Something was added: it counts toward the planning pass, or reopens a finished workspace."""
    if st.phase == "PLAN":
        st.plan_added.append(label)
        return None
    if st.phase == "COMPLETE":
        st.new_work.append(label)
        row = ROW["new_work"]
        return enter(st, row.target, row.name, [Check("new_work_arrived", True, list(st.new_work))], now)
    return None


def note_item_added(st: State, item_id: str, now: float) -> Optional[Transition]:
    return _new_work(st, f"item {item_id}", now)
