"""The live state of one `plugkit work` run: the run and each item's worker, as plain data.

An item moves queued -> (waiting) -> spawning -> running -> verifying -> landing -> one
terminal state, each with a reason word: the states, moves and words are plugkit.vocab's
(WORK_ALLOWED, WORK_REASONS, WORK_RUN_ALLOWED), enforced in ItemRun.enter and Run.enter only.
The agent-lifecycle phases an item went through (spawn, boot, loop, terminate, cleanup) are
stamped in `phases`, so a person reading `work status --json` sees where a worker got to. Everything here is JSON-safe:
the store writes it after every change, so a runner restart loses nothing that happened.
"""

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Optional

from plugkit.vocab import (WORK_ALLOWED, WORK_HELD_REASONS, WORK_LIVE_STATES, WORK_MAX_REPLACEMENTS, WORK_REASONS,
                           WORK_REPLACED_REASONS, WORK_RETRIED_REASONS, WORK_RUN_ALLOWED, WORK_TERMINAL_STATES)

LIVE, TERMINAL = WORK_LIVE_STATES, WORK_TERMINAL_STATES
END, HELD, RETRIED = WORK_REASONS, WORK_HELD_REASONS, WORK_RETRIED_REASONS
REPLACED, MAX_REPLACEMENTS = WORK_REPLACED_REASONS, WORK_MAX_REPLACEMENTS
MAX_REFUSED = 20  # the refused calls kept on an item, newest last


def with_refused(kept: list[str], what: str) -> list[str]:
    """A worker's refused calls with one more: bounded in number and length, newest last."""
    return (kept + [what[:300]])[-MAX_REFUSED:]


class BadMove(Exception):
    """A move the vocab's table does not allow: a bug in the work core, never a person's error."""


def _move(table: dict[str, frozenset[str]], what: str, old: str, new: str) -> None:
    if new not in table.get(old, frozenset()):
        raise BadMove(f"{what} cannot move from {old} to {new}")


@dataclass(frozen=True)
class RunRequest:
    """What a person asked `plugkit work` for (the domain's input; runner/rpc/work.py builds it
    from the wire's WorkStartParams, already validated there)."""

    worker: str = "claude-code"
    parallel: int = 3
    items: tuple[str, ...] = ()  # () = every open item of the .prd
    command: Optional[tuple[str, ...]] = None  # --worker command --run argv
    afk: bool = False
    budget_min: Optional[float] = None
    stall_min: float = 10.0
    merge: Optional[str] = None  # None: the workspace's work_merge
    env: dict[str, str] = field(default_factory=dict)  # the caller's environment: the workers inherit it
    sandbox: bool = True  # False: a person's --no-sandbox; the workers run unconfined
    runtime: Optional[str] = None  # where workers run (plugkit.work.cluster.RUNTIMES); None: work_runtime
    cluster: Optional[str] = None  # --runtime ray: the cluster's GCS address; None: work_cluster
    allow_remote_cluster: bool = False  # a person's --allow-remote-cluster
    network: Optional[str] = None  # None: the workspace's work_network
    quota_wait: bool = True  # False: --no-quota-wait; a usage limit fails the attempt as any exit
    caps: dict[str, float] = field(default_factory=dict)  # runner/core/work/budget.py CAPS: name -> limit


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
    node: Optional[str] = None  # --runtime ray: the node its latest attempt ran on
    placement: Optional[str] = None  # --runtime ray: the Ray task of its latest attempt
    node_losses: int = 0  # attempts ended by a lost node (not counted by the two-pass rule)
    base: Optional[str] = None  # the run branch's tip its first attempt started from: what its changes are judged against
    interrupted: Optional[str] = None  # set at a resume after a crash: the recovery note for its next attempt
    interruptions: int = 0  # attempts ended by the runner's death (not counted by the two-pass rule)
    ready: Optional[str] = None  # what made its latest worktree ready (runner/core/work/ready.py), one line
    setup_task_id: Optional[int] = None  # work_setup's task in its latest attempt
    ports: Optional[str] = None  # its latest attempt's port block, "a-b" (work_ports)
    teardown: Optional[str] = None  # what the end of its latest attempt tore down (runner/core/work/teardown.py)
    quota_until: Optional[float] = None  # parked on its host's usage limit: resumed at this time
    # Where it stopped on a usage limit or a spent budget: its worktree is kept for its next attempt,
    # whose prompt says it (runner/core/work/quota.py, budget.py).
    quota_note: Optional[str] = None
    quota_waits: int = 0  # usage limits waited out (not counted by the two-pass rule)
    tokens: int = 0  # model tokens its workers reported (their own telemetry: runner/core/work/budget.py)
    cost: float = 0.0  # USD its workers reported
    model: Optional[str] = None  # the model its latest worker reported
    pauses: int = 0  # attempts a spent budget ended (not counted by the two-pass rule)
    evicted: Optional[str] = None  # the landing queue's eviction (conflict hunks, check output): its next prompt says it
    evictions: int = 0  # attempts the landing queue evicted (each a failed pass of the two-pass rule)
    # Told after each move (the run's journal records it): set on the instance, never stored.
    moved: ClassVar[Optional[Callable[["ItemRun"], None]]] = None

    @property
    def live(self) -> bool:
        return self.state in LIVE

    @property
    def active(self) -> bool:
        """A worker or its cleanup is under way (it holds one of the run's slots)."""
        return self.state in ("spawning", "running", "verifying", "landing")

    def enter(self, state: str, now: float, reason: Optional[str] = None, message: Optional[str] = None) -> None:
        """The one place an item's state moves (plugkit.vocab.WORK_ALLOWED); a reason is a WORK_REASONS word."""
        _move(WORK_ALLOWED, f"item {self.id}", self.state, state)
        if reason is not None and reason not in WORK_REASONS:
            raise BadMove(f"item {self.id}: no reason word {reason!r} in plugkit.vocab.WORK_REASONS")
        self.state, self.reason, self.message = state, reason, message
        if state in TERMINAL:
            self.ended_at = now
        if self.moved is not None:
            self.moved(self)

    def phase(self, name: str, now: float) -> None:
        self.phases.setdefault(name, now)

    def note_refused(self, what: str) -> None:
        self.refused = with_refused(self.refused, what)


@dataclass
class QueueEntry:
    """One green branch in the landing queue of its run's branch (runner/core/work/queue.py)."""

    item: str
    attempt: int
    sha: str  # the commit that went green (before any rebase)
    green_at: float  # when it went green: the queue's order
    state: str = "waiting"  # plugkit.vocab.WORK_QUEUE_STATES
    moved_at: Optional[float] = None
    landed: Optional[str] = None  # the sha it landed as
    note: Optional[str] = None  # evicted: why, one line
    context: Optional[str] = None  # evicted: the conflict's files and hunks or the check's output tail (bounded)


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
    network: str = "host"  # plugkit.vocab.WORK_NETWORKS
    scopes: list[str] = field(default_factory=list)  # the credential scopes its workers hold (names only)
    runtime: str = "local"  # where its workers run (plugkit.work.cluster.RUNTIMES)
    cluster: Optional[str] = None  # --runtime ray: the cluster's GCS address
    refused_nodes: dict[str, str] = field(default_factory=dict)  # --runtime ray: node -> why it is not ours
    quota_wait: bool = True  # a worker stopped by its host's usage limit waits for the reset (runner/core/work/quota.py)
    caps: dict[str, float] = field(default_factory=dict)  # runner/core/work/budget.py CAPS: name -> limit
    queue: list[QueueEntry] = field(default_factory=list)  # the landing queue on `branch`, in the order they went green
    # The workspace's spend on one local day ({date, tokens, cost}: runner/core/work/days.py), as last counted.
    day_spend: dict[str, Any] = field(default_factory=dict)

    def enter(self, state: str, halt: Optional[str], ended_at: Optional[float] = None) -> None:
        """The one place a run's state moves (plugkit.vocab.WORK_RUN_ALLOWED)."""
        _move(WORK_RUN_ALLOWED, f"run {self.id}", self.state, state)
        self.state, self.halt = state, halt
        if ended_at is not None:
            self.ended_at = ended_at

    @property
    def spend(self) -> dict[str, float]:
        """What its workers reported spending, summed over its items (runner/core/work/budget.py), and
        the workspace's on the day last counted (day_tokens, day_cost: every run of that day)."""
        return {"tokens": sum(i.tokens for i in self.items.values()), "cost": sum(i.cost for i in self.items.values()),
                **({"day_tokens": self.day_spend.get("tokens", 0), "day_cost": self.day_spend.get("cost", 0.0)}
                   if self.day_spend else {})}

    @property
    def deadline(self) -> Optional[float]:
        return None if self.budget_min is None else self.started_at + self.budget_min * 60

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def snapshot(self) -> dict[str, Any]:
        """What runner.snapshot's "work" part shows of it: its state and each item's, in brief."""
        return {"workspace": self.workspace, "id": self.id, "state": self.state, "halt": self.halt,
                "waves": self.waves, "runtime": self.runtime, "cluster": self.cluster,
                "items": {i.id: {"state": i.state, "reason": i.reason, "branch": i.branch, "task_id": i.task_id,
                                 "last_beat_at": i.last_beat_at, "node": i.node, "placement": i.placement,
                                 "verify": i.verify} for i in self.items.values()}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Run":
        items = {k: ItemRun(**v) for k, v in data.pop("items", {}).items()}
        queue = [QueueEntry(**q) for q in data.pop("queue", [])]
        return cls(**data, items=items, queue=queue)
