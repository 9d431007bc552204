"""Every RPC method's params and result as pydantic models (the wire contract).

Params models forbid extra fields, so a typo in a field name is an error, not
a silently ignored option. Results are plain models the runner dumps to JSON.
"""

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from plugkit.config import Limits

_LIMITS = Limits.from_env()


# defer_build: a model's validator is built on first use, not at import, so the
# runner answers its first request sooner (most models are not needed at boot).
class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


# --- runner.* ---------------------------------------------------------------

class NoParams(Params):
    pass


class RunnerInfo(Result):
    service: str
    pid: int
    version: str
    port: int
    home: str
    started_at: float
    uptime_s: float
    sessions: int
    tasks: int
    running_tasks: int
    requests: int
    reaper: dict[str, int | float] = {}


class DebugSnapshot(Result):
    snapshot: dict


class ShutdownResult(Result):
    stopping: bool


# --- sessions and tasks ----------------------------------------------------

SessionId = Field(min_length=1, max_length=256)
TaskState = Literal["pending", "running", "completed", "failed", "killed", "timed_out", "rejected"]
Stream = Literal["stdout", "stderr", "info"]


class SessionParams(Params):
    """Names a session. An empty or unknown session simply has no tasks."""

    session_id: str = Field(max_length=256)
    cwd: str = Field(min_length=1, max_length=4096)


class TaskExecParams(Params):
    session_id: str = SessionId
    cwd: str = Field(min_length=1, max_length=4096)
    lang: str = Field(min_length=1, max_length=64)
    code: str = Field(max_length=_LIMITS.max_code_bytes)
    timeout_ms: int = Field(default=5 * 60 * 1000, ge=1, le=_LIMITS.max_timeout_ms)
    stdin: Optional[str] = Field(default=None, max_length=_LIMITS.max_code_bytes)
    env: Optional[dict[str, str]] = None
    wait_ms: int = Field(default=0, ge=0, le=_LIMITS.max_wait_ms)
    max_bytes: int = Field(default=64 << 10, ge=0, le=16 << 20)


class TaskRef(SessionParams):
    task_id: int = Field(ge=0)


class TaskKillParams(TaskRef):
    forget: bool = False


class TaskOutputParams(TaskRef):
    cursor: Optional[int] = Field(default=None, ge=0)
    max_bytes: int = Field(default=64 << 10, ge=0, le=16 << 20)


class TaskWaitParams(TaskRef):
    timeout_ms: int = Field(default=30_000, ge=0, le=_LIMITS.max_wait_ms)
    until_text: Optional[str] = Field(default=None, min_length=1, max_length=4096)
    until_regex: Optional[str] = Field(default=None, min_length=1, max_length=4096)
    cursor: Optional[int] = Field(default=None, ge=0)


class TaskInputParams(TaskRef):
    data: str = Field(default="", max_length=_LIMITS.max_code_bytes)
    eof: bool = False


class Chunk(Result):
    stream: Stream
    text: str


class Output(Result):
    chunks: list[Chunk]
    cursor: int
    dropped: int
    more: bool


class TaskInfo(Result):
    task_id: int
    session_id: str
    cwd: str
    lang: str
    state: TaskState
    pid: Optional[int] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    reason: Optional[str] = None
    message: Optional[str] = None
    started_at: float
    ended_at: Optional[float] = None
    duration_ms: Optional[int] = None
    bytes_out: int = 0
    dropped: int = 0


class TaskResult(Result):
    task: TaskInfo
    output: Output


class WaitResult(Result):
    task: TaskInfo
    matched: bool
    match_cursor: Optional[int] = None
    timed_out: bool


class TaskList(Result):
    tasks: list[TaskInfo]


class Ack(Result):
    ok: bool = True


class SessionEnded(Result):
    killed: list[int]


# --- port.* ------------------------------------------------------------------

class PortKillParams(Params):
    port: int = Field(ge=1, le=65535)
    # The plugkit command asking: a listener whose tree holds it is refused,
    # so `kill-port` never kills the agent (or shell) that typed it.
    caller_pid: Optional[int] = Field(default=None, ge=1)


class KilledProcess(Result):
    pid: int
    command: str
    processes: int  # the listener and its descendants that were signalled


class PortKillResult(Result):
    port: int
    killed: list[KilledProcess]  # empty: nothing was listening
    survivors: list[int] = []  # pids still alive after TERM, grace and KILL


# --- serial.* and task.exec lang "serial" ---------------------------------------

class SerialOpenSpec(Params):
    """What task.exec with lang "serial" carries in `code`: a JSON object naming the
    device and its line settings (a bare device path is accepted as shorthand).
    Line endings are the writer's business: task.input data reaches the port as-is."""

    port: str = Field(min_length=1, max_length=4096)  # /dev/... or loop:// (tests)
    # 50 is the slowest termios rate; 12 Mbaud covers FTDI high-speed parts. Odd
    # rates in between (74880 for ESP8266 boot logs, 250000 for 3D printers) are real.
    baud: int = Field(default=115200, ge=50, le=12_000_000)
    bytesize: Literal[5, 6, 7, 8] = 8
    parity: Literal["N", "E", "O", "M", "S"] = "N"
    stopbits: Literal[1, 1.5, 2] = 1
    rtscts: bool = False
    xonxoff: bool = False
    hex: bool = False  # output as a hex dump; task.input data read as hex digits


class SerialPortInfo(Result):
    device: str
    description: str = ""
    hwid: str = ""
    vid: Optional[int] = None  # USB vendor id
    pid: Optional[int] = None  # USB product id (not a process id)
    serial_number: Optional[str] = None
    manufacturer: Optional[str] = None
    product: Optional[str] = None
    location: Optional[str] = None


class SerialListResult(Result):
    ports: list[SerialPortInfo]


# --- memory.* (cross-session memories: plugkit/memory/) -------------------------------

MemoryType = Literal["user", "feedback", "project", "reference"]
MemoryScope = Literal["project", "user"]


class MemoryAddParams(SessionParams):
    type: MemoryType
    name: str = Field(min_length=1, max_length=64)
    # Looser than the rule (under 80) so the rule's own message, which says what to do, is the one seen.
    description: Optional[str] = Field(default=None, max_length=400)
    text: str = Field(min_length=1, max_length=64 << 10)
    scope: Optional[MemoryScope] = None  # default: "user" for type user, else "project"
    replace: bool = False


class MemoryNameParams(SessionParams):
    name: str = Field(min_length=1, max_length=256)


class MemorySearchParams(SessionParams):
    text: str = Field(min_length=1, max_length=1000)
    limit: int = Field(default=10, ge=1, le=100)


class MemoryIndexParams(SessionParams):
    max_lines: int = Field(default=40, ge=2, le=200)
    max_bytes: int = Field(default=4096, ge=512, le=64 << 10)


class MemoryInfo(Result):
    name: str
    description: str
    type: MemoryType
    scope: MemoryScope
    created: str
    updated: str
    file: str
    stale: list[str] = []  # what it names that the workspace no longer has; empty: nothing found missing
    body: Optional[str] = None  # memory.show and memory.add only
    score: Optional[float] = None  # memory.search only


class MemoryList(Result):
    memories: list[MemoryInfo]
    problems: list[str] = []  # memory files that could not be read, and why


class MemoryIndex(Result):
    text: str  # "" when there are no memories
    shown: int
    total: int


# --- lifecycle gates: gate.*, mutable.*, prd.*, evidence.*, approval.* ----------
# Every method names a session and a cwd; the workspace is the cwd's nearest ancestor
# holding .git, .prd, .plugkit/config.toml or .plugkit/state.json (else the cwd itself).

Phase = Literal["PLAN", "EXECUTE", "EMIT", "VERIFY", "COMPLETE"]
GateMode = Literal["off", "advisory", "enforce"]
ItemStatus = Literal["pending", "in_progress", "completed", "blocked"]
ItemEffort = Literal["small", "medium", "large"]
ItemRisk = Literal["low", "medium", "high", "critical"]
AgentTrigger = Literal["new_unknown", "verify_failed_code", "verify_failed_emit", "replan"]
ItemId = Field(min_length=1, max_length=64)
ReceiptRef = Field(min_length=6, max_length=64)
_Texts = Field(default=None, max_length=100)


class WorkspaceParams(Params):
    session_id: str = SessionId
    cwd: str = Field(min_length=1, max_length=4096)


class GateAdvanceParams(WorkspaceParams):
    to: Optional[Phase] = None


class GateRetreatParams(WorkspaceParams):
    trigger: AgentTrigger
    reason: str = Field(min_length=1, max_length=2000)


class EmitFile(Params):
    path: str = Field(min_length=1, max_length=4096)
    sha256: Optional[str] = Field(default=None, pattern=r"^[0-9a-f]{64}$")  # give the hash, or the content and the runner hashes it
    content: Optional[str] = None


class GateEmitParams(WorkspaceParams):
    files: list[EmitFile] = Field(max_length=1000)


class GateVerifyParams(WorkspaceParams):
    wait_ms: int = Field(default=0, ge=0, le=_LIMITS.max_wait_ms)


class GateCheckParams(WorkspaceParams):
    event: str = Field(min_length=1, max_length=64)
    tool_name: str = Field(default="", max_length=128)
    tool_input: dict = {}


class GateStopParams(WorkspaceParams):
    stop_hook_active: bool = False


class ConditionInfo(Result):
    name: str
    holds: bool
    value: object = None


class TransitionInfo(Result):
    at: float
    from_phase: Phase
    to_phase: Phase
    trigger: str
    conditions: dict = {}
    reason: str = ""


class VerifyInfo(Result):
    task_id: int
    session_id: str
    started_at: float
    head: Optional[str] = None
    outcome: Optional[Literal["green", "red", "lost"]] = None
    detail: str = ""
    receipt: Optional[str] = None


class GateStatus(Result):
    workspace: str
    mode: GateMode
    phase: Phase
    entered_at: float
    next_phase: Phase
    conditions: list[ConditionInfo]  # the next forward row's, evaluated now
    unknown_mutables: list[str]
    emission: Optional[list[str]] = None
    verify: Optional[VerifyInfo] = None
    history: list[TransitionInfo]  # the newest 10
    notices: list[str] = []


class AdvanceResult(Result):
    ok: bool
    phase: Phase
    to: Phase
    unmet: list[ConditionInfo]
    conditions: list[ConditionInfo]
    transition: Optional[TransitionInfo] = None


class EmitResult(Result):
    phase: Phase
    declared: list[str]


class VerifyStarted(Result):
    task: TaskInfo
    verify: VerifyInfo


class CheckResult(Result):
    decision: Literal["allow", "deny", "ask"]
    reason: str
    mode: GateMode


class StopResult(Result):
    block: bool
    reason: str
    missing: list[str]
    mode: GateMode


class ContextLines(Result):
    lines: list[str]


class MutableAddParams(WorkspaceParams):
    name: str = Field(min_length=1, max_length=64)
    expected: Optional[str] = Field(default=None, max_length=4096)
    description: str = Field(default="", max_length=2000)


class MutableResolveParams(WorkspaceParams):
    name: str = Field(min_length=1, max_length=64)
    task_id: int = Field(ge=0)
    line: Optional[int] = None  # 1-based; negative counts from the end (-1: the last line)
    regex: Optional[str] = Field(default=None, min_length=1, max_length=1000)


class MutableInfo(Result):
    name: str
    description: str = ""
    expected: Optional[str] = None
    value: Optional[str] = None
    status: Literal["UNKNOWN", "KNOWN"]
    attempts: int
    resolved_by: Optional[str] = None
    last_failure: Optional[str] = None


class MutableAdded(Result):
    mutable: MutableInfo
    phase: Phase
    transition: Optional[TransitionInfo] = None


class MutableList(Result):
    mutables: list[MutableInfo]


class ResolveResult(Result):
    mutable: MutableInfo
    known: bool
    failed_attempt: bool
    reason: str
    receipt: str
    phase: Phase
    transition: Optional[TransitionInfo] = None


class PrdAddParams(WorkspaceParams):
    id: Optional[str] = Field(default=None, min_length=1, max_length=64)  # default: the next wN
    subject: str = Field(min_length=1, max_length=500)
    status: ItemStatus = "pending"
    acceptance: list[str] = Field(default=[], max_length=100)
    edge_cases: list[str] = Field(default=[], max_length=100)
    blocked_by: list[str] = Field(default=[], max_length=100)
    blocking: list[str] = Field(default=[], max_length=100)
    effort: ItemEffort = "medium"
    risk: ItemRisk = "low"


class PrdUpdateParams(WorkspaceParams):
    id: str = ItemId
    subject: Optional[str] = Field(default=None, min_length=1, max_length=500)
    status: Optional[ItemStatus] = None
    acceptance: Optional[list[str]] = _Texts
    edge_cases: Optional[list[str]] = _Texts
    blocked_by: Optional[list[str]] = _Texts
    blocking: Optional[list[str]] = _Texts
    effort: Optional[ItemEffort] = None
    risk: Optional[ItemRisk] = None
    evidence: list[str] = Field(default=[], max_length=100)  # receipt ids; required to complete


class PrdReadyParams(WorkspaceParams):
    limit: Optional[int] = Field(default=None, ge=1, le=100)  # default: config ready_limit (3)


class PrdItem(Result):
    id: str
    subject: str
    status: ItemStatus
    acceptance: list[str]
    edge_cases: list[str]
    blocked_by: list[str]
    blocking: list[str]
    effort: ItemEffort
    risk: ItemRisk
    evidence: list[str]
    approved: bool = False


class PrdAdded(Result):
    item: PrdItem
    transition: Optional[TransitionInfo] = None


class PrdList(Result):
    items: list[PrdItem]
    waves: list[list[str]]


class EvidenceAddParams(WorkspaceParams):
    task_id: Optional[int] = Field(default=None, ge=0)
    path: Optional[str] = Field(default=None, min_length=1, max_length=4096)
    subject: str = Field(default="", max_length=200)
    note: str = Field(default="", max_length=2000)


class EvidenceRef(WorkspaceParams):
    receipt_id: str = ReceiptRef


class EvidenceVerifyParams(WorkspaceParams):
    receipt_ids: list[str] = Field(default=[], max_length=1000)  # empty: every receipt


class ReceiptInfo(Result):
    id: str
    kind: Literal["task_output", "verify", "file"]
    created_at: float
    sha256: str
    size: int
    path: Optional[str] = None
    task: Optional[dict] = None  # task_id, session_id, lang, code_sha256, state, exit_code, truncated
    subject: str = ""
    note: str = ""


class EvidenceList(Result):
    receipts: list[ReceiptInfo]


class ReceiptCheck(Result):
    id: str
    ok: bool
    problems: list[str]


class EvidenceVerifyResult(Result):
    ok: bool
    checked: int
    results: list[ReceiptCheck]


class ApprovalGrantParams(WorkspaceParams):
    item_id: str = ItemId
    # Who is asking: the CLI says "cli"; a hook adapter must say "hook" and is refused.
    via: Literal["cli", "hook", "rpc"]
    user: str = Field(min_length=1, max_length=128)


class ApprovalInfo(Result):
    item_id: str
    user: str
    via: str
    at: float


class ApprovalList(Result):
    approvals: list[ApprovalInfo]
    waiting: list[str]  # critical items not yet approved


# --- hook.* (platform hooks, as canonical events; client/hooks/ speaks each platform) ---
# The client adapters turn Claude Code / Qwen Code / Gemini CLI / Codex CLI stdin into these;
# session_id and cwd always come from the platform's stdin, never from an environment variable.

HookDecisionKind = Literal["allow", "deny", "ask"]


class HookSessionParams(Params):
    session_id: str = SessionId
    cwd: str = Field(min_length=1, max_length=4096)


class HookSessionStartParams(HookSessionParams):
    platform: str = Field(default="", max_length=32)
    source: str = Field(default="", max_length=64)  # startup | resume | clear | compact


class HookPreToolParams(HookSessionParams):
    tool_name: str = Field(default="", max_length=128)
    tool_input: dict = {}


class HookStopParams(HookSessionParams):
    stop_hook_active: bool = False


class HookContext(Result):
    context: str


class HookPromptResult(Result):
    context: str
    changed: bool


class HookDecision(Result):
    decision: HookDecisionKind
    reason: str


class HookStopResult(Result):
    block: bool
    reason: str


class HookSessionEnded(Result):
    killed: list[int]
