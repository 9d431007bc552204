"""The live state of one `plugkit work` run: the run and each item's worker, as plain data.

An item moves queued -> (waiting) -> spawning -> running -> verifying -> landing -> one
terminal state, each with a reason word (END below). The agent-lifecycle phases an item
went through (spawn, boot, loop, terminate, cleanup) are stamped in `phases`, so a person
reading `work status --json` sees where a worker got to. Everything here is JSON-safe:
the store writes it after every change, so a runner restart loses nothing that happened.
"""

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

from plugkit.protocol.work import WorkItemInfo, WorkRunInfo
from plugkit.vocab import WORK_LIVE_STATES, WORK_TERMINAL_STATES

LIVE, TERMINAL = WORK_LIVE_STATES, WORK_TERMINAL_STATES
# Reasons a person reads (the word is in status; this sentence in messages and docs).
END: dict[str, str] = {
    "landed": "verified in its worktree and landed on the run's branch",
    "worker_exit": "the worker exited with a failure",
    "spawn_failed": "the worker could not be started",
    "no_commits": "the worker stopped without committing anything on its branch",
    "control_files": "its branch changes .prd or .plugkit/ (the plan and the checks are a person's)",
    "verify_failed": "the verify command failed in the item's worktree",
    "stalled": "the worker was silent (no hook call, no output) past --stall-min",
    "budget": "the run's --budget-min ran out",
    "stopped": "the run was stopped (plugkit work stop)",
    "runner_restarted": "the runner stopped while the worker ran",
    "merge_conflict": "its branch does not land cleanly; the branch is kept for a person",
    "replan": "it failed twice: back to PLAN instead of a third try",
    "refused": "the gates refused to start it",
    "rolled_back": "a person rolled the landed item back (plugkit work rollback); it is pending again",
    "land_failed": "git could not land it; the branch is kept for a person",
    "internal": "plugkit work failed on this item (a bug: see the runner log)",
    "held": "blocked in .prd (by an earlier run, or a person): `plugkit prd update ID --status pending` re-queues it",
    "refs_moved": "the worker moved refs only the runner moves (restored; what it wrote kept as evidence)",
    "touches_check": "its branch changes the files of its own check; held until a person allows it",
}
# Ends a person looks at first: the .prd item is marked blocked and an unattended run halts.
HELD = frozenset({"merge_conflict", "land_failed", "refs_moved", "touches_check"})
# Failures that count toward the two-pass rule (a kill by a person or the budget does not).
RETRIED = frozenset({"worker_exit", "spawn_failed", "no_commits", "control_files", "verify_failed", "stalled"})


class Failed(Exception):
    """How an attempt ended when it did not land: (state, reason, one line)."""

    def __init__(self, state: str, reason: str, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.state, self.reason, self.message = state, reason, message
        self.detail = detail  # the last lines of the check's output, for the next attempt's prompt


@dataclass
class ItemRun:
    id: str
    subject: str
    risk: str = "low"
    state: str = "queued"
    reason: Optional[str] = None
    message: Optional[str] = None
    attempt: int = 0
    failures: int = 0
    branch: Optional[str] = None
    worktree: Optional[str] = None
    session_id: Optional[str] = None
    task_id: Optional[int] = None
    verify_task_id: Optional[int] = None
    verify: Optional[str] = None
    receipt: Optional[str] = None
    landed: Optional[str] = None
    rollback_tag: Optional[str] = None
    last_beat_at: Optional[float] = None
    started_at: Optional[float] = None
    ended_at: Optional[float] = None
    worker_s: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    stop_blocked: int = 0  # the attempt whose Stop was turned back once (never twice)
    last_failure: Optional[str] = None  # why the last attempt failed: the next attempt's prompt says it
    refused: list[str] = field(default_factory=list)  # what its worker tried on others' items, refused

    @property
    def live(self) -> bool:
        return self.state in LIVE

    @property
    def active(self) -> bool:
        """A worker or its cleanup is under way (it holds one of the run's slots)."""
        return self.state in ("spawning", "running", "verifying", "landing")

    def enter(self, state: str, now: float, reason: Optional[str] = None, message: Optional[str] = None) -> None:
        self.state, self.reason, self.message = state, reason, message
        if state in TERMINAL:
            self.ended_at = now

    def phase(self, name: str, now: float) -> None:
        self.phases.setdefault(name, now)

    def info(self) -> WorkItemInfo:
        return WorkItemInfo(**{name: getattr(self, name) for name in WorkItemInfo.model_fields})


@dataclass
class Run:
    id: str
    workspace: str
    worker: str
    parallel: int
    afk: bool
    merge: str
    branch: str
    base: str
    started_at: float
    stall_min: float
    budget_min: Optional[float] = None
    command: Optional[list[str]] = None  # --worker command --run argv
    selected: list[str] = field(default_factory=list)  # [] = every item of the .prd
    state: str = "running"
    halt: Optional[str] = None
    ended_at: Optional[float] = None
    items: dict[str, ItemRun] = field(default_factory=dict)
    # item -> who allowed it to change its own check (a person, judged by the approvals' check);
    # carried into the next run until the item lands.
    check_allowed: dict[str, str] = field(default_factory=dict)
    waves: list[list[str]] = field(default_factory=list)
    sandbox: bool = True  # False: a person's --no-sandbox; the workers run unconfined
    scopes: list[str] = field(default_factory=list)  # the credential scopes its workers hold (names only)

    @property
    def deadline(self) -> Optional[float]:
        return None if self.budget_min is None else self.started_at + self.budget_min * 60

    def info(self) -> WorkRunInfo:
        fields = {name: getattr(self, name) for name in WorkRunInfo.model_fields if name != "items"}
        return WorkRunInfo(**fields, items=[i.info() for i in self.items.values()])

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Run":
        items = {k: ItemRun(**v) for k, v in data.pop("items", {}).items()}
        return cls(**data, items=items)
