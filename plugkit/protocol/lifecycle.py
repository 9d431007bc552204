"""gate.*, mutable.*, prd.*, evidence.*, approval.* — the lifecycle gates. Params and results as pydantic models (the wire contract)."""

from typing import Annotated, Literal, Optional

from pydantic import Field

from plugkit.protocol import INT64_MAX, CallerEnvironment, Cwd, OsPath, Params, Result, SessionId, TaskId, TaskInfo
from plugkit.protocol.bounds import at_most


# --- lifecycle gates: gate.*, mutable.*, prd.*, evidence.*, approval.* ----------
# Every method names a session and a cwd; the workspace is plugkit.workspace.find_root(cwd)
# (the nearest ancestor holding a marker, else the cwd; never /, $HOME or $PLUGKIT_HOME).

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
    cwd: Cwd


class GateAdvanceParams(WorkspaceParams):
    to: Optional[Phase] = None


class GateRetreatParams(WorkspaceParams):
    trigger: AgentTrigger
    reason: str = Field(min_length=1, max_length=2000)


class EmitFile(Params):
    path: OsPath
    sha256: Optional[str] = Field(default=None, pattern=r"^[0-9a-f]{64}$")  # give the hash, or the content and the runner hashes it
    content: Optional[str] = None


class GateEmitParams(WorkspaceParams):
    files: list[EmitFile] = Field(max_length=1000)


class GateVerifyParams(WorkspaceParams):
    wait_ms: Annotated[int, Field(ge=0), at_most("max_wait_ms")] = 0
    environ: Optional[CallerEnvironment] = None  # the caller's: the verify command runs in it


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
    tampered: list[str] = []  # edits of .prd / .plugkit/state.json made outside plugkit, never taken as true


class RestoreResult(Result):
    dropped: list[str]  # the outside edits the views lost


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


class GateCiParams(WorkspaceParams):
    wait_ms: Annotated[int, Field(ge=0), at_most("max_wait_ms")] = 0  # while CI is pending, ask again until


class CiConfirmed(Result):
    sha: str  # the commit asked about: HEAD when the call came
    provider: str  # local | github | gitlab
    state: Literal["green", "red", "pending", "error"]
    note: str = ""  # which run passed, which job failed, or why it could not be asked
    log: str = ""  # red: the tail of the failing job's log


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
    task_id: TaskId
    line: Optional[int] = Field(default=None, ge=-INT64_MAX, le=INT64_MAX)  # 1-based; negative counts from the end (-1: the last line)
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
    verify: Optional[str] = Field(default=None, min_length=1, max_length=2000)  # the item's own check


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
    verify: Optional[str] = Field(default=None, min_length=1, max_length=2000)
    evidence: list[str] = Field(default=[], max_length=100)  # receipt ids; required to complete


class PrdVerifyParams(WorkspaceParams):
    id: str = ItemId
    environ: Optional[CallerEnvironment] = None  # the caller's: the check runs in it


class PrdVerified(Result):
    item_id: str
    check: str
    task_id: int
    outcome: Literal["green", "red"]
    detail: str  # how the task ended
    receipt: str  # the receipt's id: name it to complete the item (green, HEAD unmoved)
    head: Optional[str] = None  # the git HEAD it ran at (None: no repository, or HEAD moved meanwhile)


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
    verify: Optional[str] = None


class PrdAdded(Result):
    item: PrdItem
    transition: Optional[TransitionInfo] = None


class PrdList(Result):
    items: list[PrdItem]
    waves: list[list[str]]


class EvidenceAddParams(WorkspaceParams):
    task_id: Optional[TaskId] = None
    path: Optional[OsPath] = None
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
    head: Optional[str] = None  # the git HEAD its check ran at, when the runner ran it as one


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
    user: str  # the OS user of the approving process, as the runner found it
    via: str
    at: float
    channel: str = ""  # terminal | host_prompt
    tty: Optional[str] = None


class ApprovalList(Result):
    approvals: list[ApprovalInfo]
    waiting: list[str]  # critical items not yet approved


class ConfigConfirmed(Result):
    """gate.confirm_config: the settings of .plugkit/config.toml a person took ("KEY: HELD -> NOW")."""

    workspace: str
    changed: list[str]
    user: str
    tty: Optional[str] = None
