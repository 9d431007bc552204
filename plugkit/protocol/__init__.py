"""Every RPC method's params and result as pydantic models (the wire contract).

Params models forbid extra fields, so a typo in a field name is an error, not
a silently ignored option. Results are plain models the runner dumps to JSON.
"""

from typing import Annotated, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from plugkit.protocol.bounds import at_most, max_chars
from plugkit.vocab import TASK_STATES


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
TaskState = Literal[TASK_STATES]  # type: ignore[valid-type]  # Literal of the tuple's values
Stream = Literal["stdout", "stderr", "info"]


class SessionParams(Params):
    """Names a session. An empty or unknown session simply has no tasks."""

    session_id: str = Field(max_length=256)
    cwd: str = Field(min_length=1, max_length=4096)


class TaskExecParams(Params):
    session_id: str = SessionId
    cwd: str = Field(min_length=1, max_length=4096)
    lang: str = Field(min_length=1, max_length=64)
    code: Annotated[str, max_chars("max_code_bytes")]
    timeout_ms: Annotated[int, Field(ge=1), at_most("max_timeout_ms")] = 5 * 60 * 1000
    stdin: Annotated[Optional[str], max_chars("max_code_bytes")] = None
    env: Optional[dict[str, str]] = None
    wait_ms: Annotated[int, Field(ge=0), at_most("max_wait_ms")] = 0
    max_bytes: int = Field(default=64 << 10, ge=0, le=16 << 20)


class TaskRef(SessionParams):
    task_id: int = Field(ge=0)


class TaskKillParams(TaskRef):
    forget: bool = False


class TaskOutputParams(TaskRef):
    cursor: Optional[int] = Field(default=None, ge=0)
    max_bytes: int = Field(default=64 << 10, ge=0, le=16 << 20)


class TaskWaitParams(TaskRef):
    timeout_ms: Annotated[int, Field(ge=0), at_most("max_wait_ms")] = 30_000
    until_text: Optional[str] = Field(default=None, min_length=1, max_length=4096)
    until_regex: Optional[str] = Field(default=None, min_length=1, max_length=4096)
    cursor: Optional[int] = Field(default=None, ge=0)


class TaskInputParams(TaskRef):
    data: Annotated[str, max_chars("max_code_bytes")] = ""
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
