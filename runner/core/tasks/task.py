"""One task: its state machine, its output buffer, the wake-ups its waiters need, and the
TaskIO port an executor writes through (runner/executors/base.py)."""

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from plugkit.vocab import PENDING, TERMINAL_STATES, end_message
from runner.core.tasks.output import OutputBuffer
from runner.executors.base import Execution, SessionKey

__all__ = ["Execution", "SessionKey", "Task", "TaskPort"]



@dataclass(eq=False)
class Task:
    id: int
    session: SessionKey
    lang: str
    buffer: OutputBuffer
    cwd: str = ""  # where it runs (a realpath): the caller's cwd, anywhere under session.root
    detached: bool = False  # started to outlive its session (exec --detach): session ends spare it
    name: Optional[str] = None  # the caller's label (exec --name)
    command: Optional[str] = None  # the code's first line, cut: how listings tell tasks apart
    state: str = PENDING
    started_at: float = field(default_factory=time.time)
    ended_at: Optional[float] = None
    pid: Optional[int] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    reason: Optional[str] = None
    message: Optional[str] = None
    execution: Optional[Execution] = None
    deadline: Optional[float] = None  # wall clock: when its timeout ends it (kept across a restart)
    digest: str = ""  # the sha256 of its code, as its ledger record holds it
    read_cursor: int = 0  # where this session's next "what's new" read starts
    bytes_out_before: int = 0  # output a rehydrated task produced beyond the tail it kept
    # () -> an object with cpu_s and memory_peak_bytes (runner/system/cgroups.Usage), set by
    # an executor that can measure its task (a cgroup per task) through TaskPort.measured_by.
    usage_probe: Optional[Callable[[], Any]] = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        if not self.cwd:
            self.cwd = self.session.root

    @property
    def bytes_out(self) -> int:
        return self.bytes_out_before + self.buffer.end

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL_STATES

    def changed(self) -> asyncio.Event:
        """The event the next change will set. Grab it, re-check your condition, then await it:
        a change between the check and the await still wakes you (no lost wake-ups)."""
        return self._wake

    def notify(self) -> None:
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()

    @property
    def duration_ms(self) -> int:
        return int(((self.ended_at or time.time()) - self.started_at) * 1000)

    def finish(self, state: str, reason: str, *, exit_code: Optional[int] = None,
               signal: Optional[int] = None, message: Optional[str] = None,
               now: Optional[float] = None) -> bool:
        """Move to a terminal state once; later calls are ignored (the first cause wins)."""
        if self.finished:
            return False
        self.state, self.reason = state, reason
        self.exit_code, self.signal = exit_code, signal
        self.message = message or end_message(self.id, reason)
        self.ended_at = time.time() if now is None else now
        self.done.set()
        self.notify()
        return True


class TaskPort:
    """The TaskIO an executor gets: output in, waiters woken in the same call, the started
    step handed to the manager. Nothing else of the Task is reachable through it."""

    __slots__ = ("_task", "_on_started")

    def __init__(self, task: Task, on_started: Callable[[Execution], None]) -> None:
        self._task, self._on_started = task, on_started

    @property
    def id(self) -> int:
        return self._task.id

    @property
    def session(self) -> SessionKey:
        return self._task.session

    @property
    def cwd(self) -> str:
        return self._task.cwd

    @property
    def finished(self) -> bool:
        return self._task.finished

    def write(self, stream: str, data: bytes) -> None:
        self._task.buffer.feed(stream, data)
        self._task.notify()

    def write_text(self, stream: str, text: str) -> None:
        self._task.buffer.write_text(stream, text)
        self._task.notify()

    def flush(self, stream: str) -> None:
        self._task.buffer.flush(stream)
        self._task.notify()

    def started(self, execution: Execution) -> None:
        self._on_started(execution)

    def measured_by(self, probe: Callable[[], Any]) -> None:
        self._task.usage_probe = probe
