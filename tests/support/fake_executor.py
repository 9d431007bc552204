"""A hand-written Executor for TaskManager unit tests: no process, the test decides everything.

Each task's run waits until the test ends it (`end`) or the manager kills it (a kill ends
the run as a killed process would: signal 9). `prepare` can be held open (`hold`), so
concurrent execs pile up between their limit check and their task's birth.
"""

import asyncio
from typing import Optional

from runner.executors.base import ExecSpec, Outcome, Prepared, SessionKey, TaskIO


class FakeRun:
    """The Execution the fake hands the manager: records input and kills."""

    pid = None

    def __init__(self) -> None:
        self.kills = 0
        self.killed = asyncio.Event()
        self.input = bytearray()
        self._open = True

    def write(self, data: bytes) -> None:
        self.input += data

    def close_input(self) -> None:
        self._open = False

    def input_open(self) -> bool:
        return self._open

    async def kill(self) -> None:
        self.kills += 1
        await asyncio.sleep(0)  # a real kill awaits a thread: let others run meanwhile
        self.killed.set()


class FakeExecutor:
    name = "fake"

    def __init__(self, refuse: Optional[Exception] = None, start: bool = True) -> None:
        self.refuse = refuse  # raised by prepare, after the hold
        self.start = start  # False: runs never call io.started (a step still spawning)
        self.hold: Optional[asyncio.Event] = None  # set: prepare waits for it
        self.prepared = 0
        self.ios: dict[int, TaskIO] = {}
        self.runs: dict[int, FakeRun] = {}
        self._endings: dict[int, asyncio.Future] = {}
        self.ended_sessions: list[SessionKey] = []
        self.closed = False

    def claims(self, lang: str) -> bool:
        return True

    async def prepare(self, spec: ExecSpec) -> Prepared:
        self.prepared += 1
        await (self.hold.wait() if self.hold is not None else asyncio.sleep(0))
        if self.refuse is not None:
            raise self.refuse
        return Prepared(spec.lang, spec)

    async def run(self, io: TaskIO, prepared: Prepared, spec: ExecSpec) -> Outcome:
        self.ios[io.id] = io
        run = self.runs[io.id] = FakeRun()
        ending = self._endings[io.id] = asyncio.get_running_loop().create_future()
        if self.start:
            io.started(run)
        killed = asyncio.ensure_future(run.killed.wait())
        try:
            await asyncio.wait({ending, killed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            killed.cancel()
        if ending.done():
            return ending.result()
        return Outcome("failed", "signal", signal=9, message=f"task_{io.id} was ended by signal 9")

    def started(self, task_id: int) -> None:
        """A step that was still spawning (start=False) is up now."""
        self.ios[task_id].started(self.runs[task_id])

    def end(self, task_id: int, outcome: Outcome) -> None:
        """The task's process ends by itself with this outcome."""
        self._endings[task_id].set_result(outcome)

    async def end_session(self, key: SessionKey) -> None:
        self.ended_sessions.append(key)

    async def close(self) -> None:
        self.closed = True

    def snapshot(self) -> dict:
        return {"runs": sorted(self.runs)}


async def settle() -> None:
    """Let every ready callback run (the fake's runs, the supervisors' endings)."""
    for _ in range(10):
        await asyncio.sleep(0)
