"""The Executor protocol: what the TaskManager needs from any way of running a task.

An executor claims task.exec `lang` values, validates a request before any task
exists, runs the task to an Outcome, and owns per-session resources (a browser
page, a serial port) that session end and shutdown release.
"""

from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol

from plugkit.protocol import TaskExecParams
from runner.core.tasks.task import Execution, SessionKey, Task


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


class Executor(Protocol):
    name: str

    def claims(self, lang: str) -> bool:
        """True if task.exec with this `lang` is ours."""
        ...

    async def prepare(self, p: TaskExecParams) -> Prepared:
        """Validate and resolve the request; raise plugkit.errors.RpcError on bad input.
        Runs before the task exists, so a refusal starts nothing."""
        ...

    async def run(self, task: Task, prepared: Prepared, p: TaskExecParams,
                  on_start: Callable[[Execution], None]) -> Outcome:
        """Run until the task ends by itself; call on_start(execution) once it can take
        input and kills. Must honour cancellation (runner shutdown)."""
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
