"""Every RPC method's params and result as pydantic models (the wire contract).

Params models forbid extra fields, so a typo in a field name is an error, not
a silently ignored option. Results are plain models the runner dumps to JSON.
"""

from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from plugkit.protocol.bounds import at_most, max_chars
from plugkit.vocab import ENVIRON_MAX_CHARS, TASK_STATES


# --- values that reach the OS, decided here once (issue 17.7) ------------------
# Every field of one of these kinds uses the shared type, so a new method cannot forget a
# check: tests/inproc/test_bad_values.py walks every params model and fails on a plain
# `cwd: str`. Before, a NUL byte in cwd or a task_id >= 2^63 came back -32603 from deep in
# the OS or sqlite, a NUL or '=' in an env key failed the spawn with a traceback in the log,
# and cwd "." ran the task in the runner's own directory (PLUGKIT_HOME, next to the token).

def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("contains a NUL byte")
    return value


def _absolute(value: str) -> str:
    _no_nul(value)
    if not value.startswith("/"):
        raise ValueError("must be an absolute path (a relative one would resolve against the "
                         "runner's directory, not yours): pass the full path, e.g. \"$PWD\"")
    return value


def _environment(env: dict[str, str]) -> dict[str, str]:
    # Checked as a whole so the error names the field, never echoes the offending key.
    for name, value in env.items():
        if not name or "=" in name or "\x00" in name:
            raise ValueError("an environment variable name must be non-empty, without '=' or NUL")
        if "\x00" in value:
            raise ValueError("an environment variable value cannot contain a NUL byte")
    return env


def _environ_size(env: dict[str, str]) -> dict[str, str]:
    if sum(len(k) + len(v) + 2 for k, v in env.items()) > ENVIRON_MAX_CHARS:
        raise ValueError(f"the environment is over {ENVIRON_MAX_CHARS} characters; send none (the task then runs "
                         "in the runner's environment) or unset large variables")
    return env


INT64_MAX = (1 << 63) - 1  # sqlite's INTEGER and every C int64 the value may reach
PID_MAX = 1 << 22  # Linux's PID_MAX_LIMIT

# An absolute directory path without NUL: every session's and workspace's cwd.
Cwd = Annotated[str, Field(min_length=1, max_length=4096), AfterValidator(_absolute)]
# A file or device path that reaches open(2): no NUL.
OsPath = Annotated[str, Field(min_length=1, max_length=4096), AfterValidator(_no_nul)]
TaskId = Annotated[int, Field(ge=0, le=INT64_MAX)]
Offset = Annotated[int, Field(ge=0, le=INT64_MAX)]  # byte cursors
Environment = Annotated[dict[str, str], Field(max_length=4096), AfterValidator(_environment)]
# A caller's whole environment, at most ENVIRON_MAX_CHARS characters of NAME=VALUE (the client checks the same).
CallerEnvironment = Annotated[dict[str, str], Field(max_length=4096), AfterValidator(_environment),
                              AfterValidator(_environ_size)]


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
    browser: dict = {}  # running, pid, chromium, sandbox {on, why}


class DebugSnapshot(Result):
    snapshot: dict


class ShutdownResult(Result):
    stopping: bool


class RestartResult(Result):
    """runner.restart: the runner re-executes itself in place; these tasks keep running."""

    restarting: bool
    pid: int
    kept: list[int]  # task ids that keep running across the restart
    cut: list[str]  # "task_7 (browser)": ended, because nothing of theirs survives an exec
    message: str  # one line saying both


# --- sessions and tasks ----------------------------------------------------

SessionId = Field(min_length=1, max_length=256)
TaskState = Literal[TASK_STATES]  # type: ignore[valid-type]  # Literal of the tuple's values
Stream = Literal["stdout", "stderr", "info"]
# A label a person or agent gives a task at exec (`--name web`): printable, one short word or phrase.
TaskName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[^\x00-\x1f\x7f]+$")]


class SessionParams(Params):
    """Names a session. An empty or unknown session simply has no tasks."""

    session_id: str = Field(max_length=256)
    cwd: Cwd


class TaskExecParams(Params):
    session_id: str = SessionId
    cwd: Cwd
    lang: str = Field(min_length=1, max_length=64)
    code: Annotated[str, max_chars("max_code_bytes")]
    timeout_ms: Annotated[int, Field(ge=1), at_most("max_timeout_ms")] = 5 * 60 * 1000
    stdin: Annotated[Optional[str], max_chars("max_code_bytes")] = None
    env: Optional[Environment] = None  # set over the base environment
    # The caller's whole environment: the task's base (minus plugkit's secrets and tags, which the
    # runner sets), and the PATH a language's program is found on. Without it: the runner's.
    environ: Optional[CallerEnvironment] = None
    detach: bool = False  # outlives its session: not killed at session end or when its agent host exits
    sandbox: bool = False  # in the worker sandbox (runner/system/sandbox.py): cwd writable, the rest read-only
    # The caller's own pid (the CLI's, the hook's): checked to hold this connection, then its
    # nearest agent-host ancestor is the session's host. Without it the session is tied to none.
    caller_pid: Optional[int] = Field(default=None, ge=1, le=PID_MAX)
    wait_ms: Annotated[int, Field(ge=0), at_most("max_wait_ms")] = 0
    max_bytes: int = Field(default=64 << 10, ge=0, le=16 << 20)
    name: Optional[TaskName] = None  # the caller's label for it, shown by exec:tasks and exec:status


class TaskLastParams(SessionParams):
    # The caller's own pid: the sessions tied to the agent host above it count as its own.
    caller_pid: Optional[int] = Field(default=None, ge=1, le=PID_MAX)


class TaskLast(Result):
    task_id: Optional[int] = None  # None: no finished task


class TaskRef(SessionParams):
    task_id: TaskId


class TaskKillParams(TaskRef):
    forget: bool = False


class TaskOutputParams(TaskRef):
    cursor: Optional[Offset] = None
    max_bytes: int = Field(default=64 << 10, ge=0, le=16 << 20)
    # From cursor to the end, at most max_bytes shared by the streams, each keeping its last bytes.
    tails: bool = False
    # With tails: the share of each stream's budget given to its first bytes (a poll wants
    # mostly the newest), and whether the session's cursor then moves to the end, so the
    # next poll shows only what is new (what was cut stays readable with an explicit cursor).
    head_share: float = Field(default=0.5, ge=0, le=1)
    mark_read: bool = False


class TaskWaitParams(TaskRef):
    timeout_ms: Annotated[int, Field(ge=0), at_most("max_wait_ms")] = 30_000
    until_text: Optional[str] = Field(default=None, min_length=1, max_length=4096)
    until_regex: Optional[str] = Field(default=None, min_length=1, max_length=4096)
    cursor: Optional[Offset] = None


class TaskInputParams(TaskRef):
    data: Annotated[str, max_chars("max_code_bytes")] = ""
    eof: bool = False


class Chunk(Result):
    stream: Stream
    text: str


class StreamCut(Result):
    stream: Stream
    total: int  # bytes of the stream in the range read
    shown: int  # of which these chunks hold


class Output(Result):
    chunks: list[Chunk]
    cursor: int
    dropped: int
    more: bool
    cuts: Optional[list[StreamCut]] = None  # only for a read with tails
    start: Optional[int] = None  # with tails: the first offset the task's ring still holds




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
    # Measured by the task's cgroup (runner/system/cgroups.py); None where there is none
    # (tags mode) or the kernel lacks the memory controller.
    cpu_s: Optional[float] = None
    memory_peak_bytes: Optional[int] = None
    memory_bytes: Optional[int] = None  # in use now (a running task's cgroup memory.current)
    # Running, and blocked reading a stdin only task.input can feed (Linux; else always false).
    waiting_for_input: bool = False
    detached: bool = False  # started with detach: outlives its session
    name: Optional[str] = None  # given at exec (--name)
    command: Optional[str] = None  # the code's first non-blank line, cut to COMMAND_CHARS (None: not kept)
    ports: list[int] = []  # TCP ports a process of a running task's tree listens on


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
