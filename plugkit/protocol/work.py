"""work.* — the runner drives coding agents as workers through the `.prd` (the wire contract).

A run belongs to one workspace (plugkit.workspace.find_root of cwd); at most one live run
per workspace. Items run in their own git worktrees, are verified by the runner, and land
on the branch the run started from.
"""

from typing import Annotated, Any, Literal, Optional

from pydantic import Field

from plugkit.hosts import WORKER_NAMES
from plugkit.protocol import Cwd, Environment, Offset, Params, Result, SessionId
from plugkit.protocol.bounds import at_most
from plugkit.protocol.lifecycle import ItemId
from plugkit.vocab import WORK_ITEM_STATES, WORK_NETWORKS, WORK_QUEUE_STATES, WORK_RUN_STATES, WORK_RUNTIMES

WorkerName = Literal[WORKER_NAMES]  # type: ignore[valid-type]  # every host with a worker, and "command"
MergeMode = Literal["ff", "merge"]
Runtime = Literal[WORK_RUNTIMES]  # type: ignore[valid-type]
Network = Literal[WORK_NETWORKS]  # type: ignore[valid-type]
RunState = Literal[WORK_RUN_STATES]  # type: ignore[valid-type]
# Live item states, then the terminal ones (each terminal state comes with a reason word).
ItemState = Literal[WORK_ITEM_STATES]  # type: ignore[valid-type]  # Literal of the tuple's values
QueueState = Literal[WORK_QUEUE_STATES]  # type: ignore[valid-type]  # waiting rebasing checking landed evicted


class WorkParams(Params):
    session_id: str = SessionId
    cwd: Cwd


Tokens = Optional[int]
Usd = Optional[float]


class BudgetCaps(Params):
    """Token and cost caps (runner/core/work/budget.py): a spent one pauses the run until a person raises it."""
    budget_tokens: Tokens = Field(default=None, gt=0, le=10 ** 12)  # the run's model tokens
    budget_cost: Usd = Field(default=None, gt=0, le=10 ** 6)  # the run's cost, USD (hosts that report it)
    item_budget_tokens: Tokens = Field(default=None, gt=0, le=10 ** 12)  # each item's, over its attempts
    item_budget_cost: Usd = Field(default=None, gt=0, le=10 ** 6)
    item_budget_min: Optional[float] = Field(default=None, gt=0, le=7 * 24 * 60)  # each item's workers' wall time
    # The workspace's spend on the person's local day, over every run (work_day_* in .plugkit/config.toml too).
    budget_day_tokens: Tokens = Field(default=None, gt=0, le=10 ** 12)
    budget_day_cost: Usd = Field(default=None, gt=0, le=10 ** 6)

    def caps(self) -> dict[str, float]:
        given = {"tokens": self.budget_tokens, "cost": self.budget_cost, "item_tokens": self.item_budget_tokens,
                 "item_cost": self.item_budget_cost, "item_min": self.item_budget_min,
                 "day_tokens": self.budget_day_tokens, "day_cost": self.budget_day_cost}
        return {k: float(v) for k, v in given.items() if v is not None}


class WorkResumeParams(WorkParams, BudgetCaps):
    pass


class WorkStartParams(WorkParams, BudgetCaps):
    parallel: int = Field(default=3, ge=1, le=16)
    items: list[Annotated[str, ItemId]] = Field(default=[], max_length=1000)
    worker: WorkerName = "claude-code"
    run: Optional[list[Annotated[str, Field(min_length=1, max_length=4096)]]] = Field(
        default=None, min_length=1, max_length=256)  # argv of --worker command
    afk: bool = False
    budget_min: Optional[float] = Field(default=None, gt=0, le=7 * 24 * 60)
    stall_min: float = Field(default=10.0, gt=0, le=24 * 60)
    merge: Optional[MergeMode] = None  # None: the workspace's work_merge, else "ff"
    env: Optional[Environment] = None  # the caller's environment: the workers inherit it
    sandbox: bool = True  # False: a person's --no-sandbox; workers run unconfined (status shows it)
    runtime: Optional[Runtime] = None  # where workers run; None: work_runtime of the workspace, else local
    cluster: Optional[str] = Field(default=None, min_length=1, max_length=512)  # runtime ray: HOST:PORT
    allow_remote_cluster: bool = False  # a person's override of the loopback-or-TLS rule
    network: Optional[Network] = None  # None: the workspace's work_network (default "host")
    quota_wait: bool = True  # False: --no-quota-wait; a usage limit fails the attempt (retried, counted)


# A run's id, or a unique prefix of it (`plugkit work runs` lists them); None: the latest run.
RunId = Annotated[Optional[str], Field(default=None, pattern=r"^[0-9a-f]{1,32}$")]


class WorkStatusParams(WorkParams):
    wait_ms: Annotated[int, Field(ge=0), at_most("max_wait_ms")] = 0  # until the run halts or ends
    run: RunId = None


class WorkItemParams(WorkParams):
    item: str = ItemId


class WorkRunItemParams(WorkItemParams):
    run: RunId = None  # an item of the kept run `run` (default: the latest run)


class WorkRunsParams(WorkParams):
    limit: int = Field(default=20, ge=1, le=200)


class WorkEventsParams(WorkParams):
    run: RunId = None
    after: Offset = 0  # events past this sequence number (0: from the first)
    item: Annotated[Optional[str], Field(default=None, min_length=1, max_length=64)] = None  # its trace only
    attempt: Optional[int] = Field(default=None, ge=1)  # with item: one attempt's
    limit: int = Field(default=200, ge=1, le=5000)  # the newest this many past `after`
    wait_ms: Annotated[int, Field(ge=0), at_most("max_wait_ms")] = 0  # until an event past `after` or the end


class WorkLogsParams(WorkRunItemParams):
    verify: bool = False  # the item's latest verify run instead of its worker
    cursor: Optional[Offset] = None
    max_bytes: int = Field(default=64 << 10, ge=0, le=16 << 20)
    wait_ms: Annotated[int, Field(ge=0), at_most("max_wait_ms")] = 0  # until new output or the end


class WorkItemInfo(Result):
    id: str
    subject: str
    state: ItemState
    reason: Optional[str] = None  # why it is in that state (terminal: the end reason word)
    message: Optional[str] = None  # one line for a person
    attempt: int = 0
    branch: Optional[str] = None
    worktree: Optional[str] = None
    task_id: Optional[int] = None  # the worker task (its own session)
    verify_task_id: Optional[int] = None
    verify: Optional[str] = None  # green | red | none
    receipt: Optional[str] = None
    landed: Optional[str] = None  # the sha the item landed as on the run's branch
    rollback_tag: Optional[str] = None
    last_beat_at: Optional[float] = None
    started_at: Optional[float] = None
    ended_at: Optional[float] = None
    worker_s: float = 0.0  # the workers' own wall time, summed over attempts
    phases: dict[str, float] = {}  # trigger/spawn/boot/loop/terminate/cleanup -> when first entered
    refused: list[str] = []  # what its worker tried on items not its own (refused, newest last)
    node: Optional[str] = None  # runtime ray: the cluster node of its latest attempt
    placement: Optional[str] = None  # runtime ray: the Ray task of its latest attempt
    node_losses: int = 0  # attempts ended by a lost node (placed again, not counted as failures)
    failures: int = 0  # failed passes (the two-pass rule: a second one sends the item back to PLAN)
    interruptions: int = 0  # attempts the runner's death cut short (resumed, not counted as failures)
    ready: Optional[str] = None  # what made its latest worktree ready: files, shared dirs, ports, setup
    setup_task_id: Optional[int] = None  # work_setup's task in its latest attempt
    ports: Optional[str] = None  # work_ports: its latest attempt's port block, "a-b"
    teardown: Optional[str] = None  # what the end of its latest attempt tore down
    quota_until: Optional[float] = None  # waiting_quota: resumed at this time (its host's usage limit resets)
    quota_waits: int = 0  # usage limits waited out (resumed in the same worktree, not counted as failures)
    tokens: int = 0  # model tokens its workers reported (their own telemetry)
    cost: float = 0.0  # USD its workers reported
    model: Optional[str] = None  # the model its latest worker reported
    pauses: int = 0  # attempts a spent budget ended (resumed on the kept branch, not counted as failures)
    evictions: int = 0  # attempts the landing queue evicted (a conflict or a red check after the rebase)


class WorkQueueEntry(Result):
    """One green branch in the landing queue of the run's branch, in the order they went green."""

    item: str
    attempt: int
    sha: str  # the commit that went green, before any rebase
    green_at: float
    state: QueueState
    moved_at: Optional[float] = None
    landed: Optional[str] = None  # the sha it landed as
    note: Optional[str] = None  # evicted: why, one line
    context: Optional[str] = None  # evicted: the conflict's files and hunks, or the check's output tail (bounded)


class WorkRunInfo(Result):
    id: str
    workspace: str
    state: RunState
    halt: Optional[str] = None  # the one line a person reads first: why it halted or waits
    worker: str
    parallel: int
    afk: bool
    merge: str
    branch: str
    base: str
    started_at: float
    ended_at: Optional[float] = None
    budget_min: Optional[float] = None
    stall_min: float
    items: list[WorkItemInfo]
    waves: list[list[str]] = []
    check_allowed: dict[str, str] = {}  # item -> the person who allowed it to change its own check
    sandbox: bool = True  # False: workers run without the bwrap sandbox (--no-sandbox)
    network: Network = "host"  # plugkit.vocab.WORK_NETWORKS
    quota_wait: bool = True  # False: --no-quota-wait (a usage limit fails the attempt, no wait)
    scopes: list[str] = []  # the credential scopes the workers hold: names, never values
    runtime: str = "local"  # where the workers run: local | ray
    cluster: Optional[str] = None  # runtime ray: the cluster's address
    refused_nodes: dict[str, str] = {}  # runtime ray: nodes given no item (not proven ours), and why
    caps: dict[str, float] = {}  # tokens | cost | item_tokens | item_cost | item_min | day_tokens | day_cost -> the cap
    # tokens | cost: what the run's workers reported so far; day_tokens | day_cost: the workspace's on day_spend's date
    spend: dict[str, float] = {}
    day_spend: dict[str, Any] = {}  # {date, tokens, cost}: the workspace's spend on that local day (every run)
    queue: list[WorkQueueEntry] = []  # the landing queue: the latest entries, oldest green first


class WorkStatus(Result):
    run: Optional[WorkRunInfo] = None  # None: no run ever started in this workspace


class WorkLogs(Result):
    item: str
    task_id: Optional[int] = None
    chunks: list[tuple[str, str]] = []  # (stream, text)
    cursor: int = 0
    end: int = 0  # where the output ends now (a reader wanting only the tail starts near it)
    more: bool = False
    finished: bool = True


class WorkEvent(Result):
    seq: int
    t: float  # when the runner recorded it (epoch seconds)
    item: Optional[str] = None  # None: the run's own event
    attempt: int = 0
    kind: str  # item | run | boot | tool | exec | refused
    text: str


class WorkEvents(Result):
    run: Optional[str] = None  # the run's id (None: no run in this workspace yet)
    started_at: Optional[float] = None
    state: Optional[RunState] = None
    ended: bool = True  # the run is over: no event will follow
    attempt: Optional[int] = None  # with item: the attempt these are of (default: its latest)
    events: list[WorkEvent] = []
    seq: int = 0  # the last event's number: pass it back as `after`
    skipped: int = 0  # events past `after` left out (only the newest `limit` are sent)
    tools_left_out: int = 0  # item+attempt: tool calls past the journal's bound, counted not kept


class WorkRunSummary(Result):
    id: str
    state: RunState
    halt: Optional[str] = None
    worker: str
    started_at: float
    ended_at: Optional[float] = None
    items: dict[str, int] = {}  # item state -> how many
    landed: list[str] = []  # items that landed


class WorkRuns(Result):
    runs: list[WorkRunSummary] = []  # newest first


class WorkRolledBack(Result):
    item: str
    head: str
    how: str  # reset | revert
