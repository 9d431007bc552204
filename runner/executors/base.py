"""The Executor protocol and the port it runs a task through: what TaskManager and executors share.

An executor claims task.exec `lang` values, validates an ExecSpec before any task
exists, runs the task to an Outcome through a TaskIO (never the Task itself), and
owns per-session resources (a browser page, a serial port) that session end and
shutdown release. Executors import nothing from runner.core: the core imports them.
Refusals are plugkit.refusals (by kind), never wire codes.
"""

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Protocol


@dataclass(frozen=True)
class SessionKey:
    """A session: the agent's id and the workspace it works in (plugkit/workspace.py's root of
    the cwd, else the realpath cwd itself). Not the cwd: an agent that `cd`s within its project
    keeps its session, while two agents (two ids) in one directory stay apart."""

    session_id: str
    root: str  # realpath


@dataclass(frozen=True)
class ExecSpec:
    """One request to run code, as the core sees it (the RPC layer builds it from the wire).
    By the time an executor sees it, `cwd` is the realpath the task runs in (the caller's cwd,
    not the session's root)."""

    session_id: str
    cwd: str
    lang: str
    code: str
    timeout_s: float = 300.0
    stdin: Optional[str] = None  # written, then closed; None leaves stdin open for input
    env: Optional[Mapping[str, str]] = None  # set over the base environment (the caller's or the runner's)
    # The caller's whole environment: the task starts from it (minus plugkit's secrets and tags)
    # instead of the runner's, and a language's program is found on its PATH. None: the runner's.
    environ: Optional[Mapping[str, str]] = None
    detach: bool = False  # outlives its session: not killed at session end or when the host exits
    sandbox: bool = False  # in the worker sandbox: its cwd writable, the rest read-only, the home hidden
    offline: bool = False  # in that sandbox, no network but its own loopback
    peer: Optional[tuple] = None  # the loopback address the request came from (ties a session to its host)
    caller_pid: Optional[int] = None  # the pid the caller names, checked against peer before it counts
    root: Optional[str] = None  # the session's root; the manager sets it before an executor sees the spec
    # The workspace root of cwd (plugkit/workspace.py), None: cwd is in none. Found once per exec
    # and passed down (the walk up the directories cost ~60 us, and was done three times);
    # NOT_LOOKED_UP until the task.exec handler or the manager looks.
    workspace: Optional[str] = ""
    name: Optional[str] = None  # the caller's label (exec --name), shown in listings
    # A work attempt's work_docker proxy socket, shown in the task's sandbox as DOCKER_HOST: set by
    # the runner only (a worker's capability, its work_setup), never from the wire.
    docker: Optional[str] = None

    @property
    def session(self) -> SessionKey:
        return SessionKey(self.session_id, self.root or self.cwd)


NOT_LOOKED_UP = ""  # ExecSpec.workspace before the lookup: a root is an absolute path, never ""


@dataclass(frozen=True)
class Outcome:
    """How a task ended by itself. A kill or timeout requested by the manager overrides it."""

    state: str                     # completed | failed
    reason: str                    # a word from plugkit.vocab.END_REASONS (or a new one)
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    message: Optional[str] = None


@dataclass(frozen=True)
class Prepared:
    """A validated request: the canonical language name and whatever the executor resolved."""

    lang: str
    payload: Any = None


class Execution(Protocol):
    """What an executor hands back for a started step: input and kill. It may also carry
    `pid` (the step's root process) and `kill_ends_as` ((state, reason) a task.kill ends in)."""

    def write(self, data: bytes) -> None: ...
    def close_input(self) -> None: ...
    def input_open(self) -> bool: ...
    async def kill(self) -> None: ...


class TaskIO(Protocol):
    """The task as an executor sees it: who it is, where its output goes, when it started.

    Every write wakes the task's waiters in the same call, so no executor can forget to.
    How the task ends is the Outcome `run` returns (or the manager's kill or timeout)."""

    @property
    def id(self) -> int: ...
    @property
    def session(self) -> SessionKey: ...
    @property
    def cwd(self) -> str:
        """Where the task runs (a realpath): the caller's cwd at exec, inside the session's root."""
    @property
    def finished(self) -> bool: ...
    def write(self, stream: str, data: bytes) -> None: ...
    def write_text(self, stream: str, text: str) -> None: ...
    def flush(self, stream: str) -> None:
        """A stream ended: what an incomplete UTF-8 sequence held back is written out."""
    def started(self, execution: Execution) -> None:
        """A step started (it takes input and kills now); sets the task's pid from it."""
    def measured_by(self, probe: Callable[[], Any]) -> None:
        """Where the task's CPU seconds and peak memory are read (an object with cpu_s and
        memory_peak_bytes); an executor that cannot measure never calls it."""


class Executor(Protocol):
    name: str

    def claims(self, lang: str) -> bool:
        """True if task.exec with this `lang` is ours."""
        ...

    async def prepare(self, spec: ExecSpec) -> Prepared:
        """Validate and resolve the request; raise a plugkit.refusals error on bad input.
        Runs before the task exists, so a refusal starts nothing."""
        ...

    async def run(self, io: TaskIO, prepared: Prepared, spec: ExecSpec) -> Outcome:
        """Run until the task ends by itself; call io.started(execution) once each step can
        take input and kills. Must honour cancellation (runner shutdown)."""
        ...

    async def end_session(self, key: SessionKey) -> None:
        """Release what this executor holds for the session (after its tasks were killed)."""
        ...

    async def close(self) -> None:
        """Runner shutdown: release everything."""
        ...

    def snapshot(self) -> dict:
        """What it holds right now, for runner.info and /debug."""
        ...
