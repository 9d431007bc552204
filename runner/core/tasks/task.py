"""One task: its state machine, its output buffer, and the wake-ups its waiters need."""

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol

from plugkit.protocol import TaskInfo
from plugkit.vocab import PENDING, TERMINAL_STATES, end_message
from runner.core.tasks.output import OutputBuffer



class Execution(Protocol):
    """What an executor hands back for a started task."""

    def write(self, data: bytes) -> None: ...
    def close_input(self) -> None: ...
    def input_open(self) -> bool: ...
    async def kill(self) -> None: ...


@dataclass(frozen=True)
class SessionKey:
    session_id: str
    cwd: str  # realpath


@dataclass(eq=False)
class Task:
    id: int
    session: SessionKey
    lang: str
    buffer: OutputBuffer
    state: str = PENDING
    started_at: float = field(default_factory=time.time)
    ended_at: Optional[float] = None
    pid: Optional[int] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    reason: Optional[str] = None
    message: Optional[str] = None
    execution: Optional[Execution] = None
    read_cursor: int = 0  # where this session's next "what's new" read starts
    bytes_out_before: int = 0  # output a rehydrated task produced beyond the tail it kept
    # () -> an object with cpu_s and memory_peak_bytes (runner/system/cgroups.Usage), set by
    # an executor that can measure its task (a cgroup per task); live until the task ends.
    usage_probe: Optional[Callable[[], Any]] = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)

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

    def finish(self, state: str, reason: str, *, exit_code: Optional[int] = None,
               signal: Optional[int] = None, message: Optional[str] = None) -> bool:
        """Move to a terminal state once; later calls are ignored (the first cause wins)."""
        if self.finished:
            return False
        self.state, self.reason = state, reason
        self.exit_code, self.signal = exit_code, signal
        self.message = message or end_message(self.id, reason)
        self.ended_at = time.time()
        self.done.set()
        self.notify()
        return True

    def info(self) -> TaskInfo:
        end = self.ended_at or time.time()
        return TaskInfo(
            task_id=self.id, session_id=self.session.session_id, cwd=self.session.cwd,
            lang=self.lang, state=self.state, pid=self.pid, exit_code=self.exit_code,
            signal=self.signal, reason=self.reason, message=self.message,
            started_at=self.started_at, ended_at=self.ended_at,
            duration_ms=int((end - self.started_at) * 1000),
            bytes_out=self.bytes_out, dropped=self.bytes_out_before + self.buffer.dropped,
            **self._usage(),
        )

    def _usage(self) -> dict:
        if self.usage_probe is None:
            return {}
        usage = self.usage_probe()
        return {"cpu_s": usage.cpu_s, "memory_peak_bytes": usage.memory_peak_bytes}
