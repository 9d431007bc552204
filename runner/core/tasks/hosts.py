"""Sessions tied to the agent host process their calls come from, ended when it exits.

Some hosts fire no session-end event (`qwen -p`), and any host can be killed before it
fires one: the tasks its agent left running would outlive it. So the first task.exec of a
session asks which agent host the caller runs under (runner/system/peers.py: the loopback
peer's process, then its nearest agent-host ancestor) and remembers it; the sweep checks
the tied hosts of sessions that run something, and a session whose host is gone ends like
a session end (reason host_gone). A task started with detach outlives both.
"""

import asyncio
from typing import Callable, Optional, Protocol

from runner.core.tasks.sessions import Session
from runner.system import logs

log = logs.get("plugkit.tasks")


class Host(Protocol):
    pid: int
    label: str

    def alive(self) -> bool: ...


# (peer address, the pid the caller names) -> the agent host above it (blocking: reads /proc), or None
HostFinder = Callable[[tuple, int], Optional[Host]]
ASK = object()  # find's answer when the session was asked before: nothing to tie


class HostTies:
    def __init__(self, finder: Optional[HostFinder]) -> None:
        self.finder = finder

    async def find(self, session: Optional[Session], peer: Optional[tuple], pid: Optional[int]) -> object:
        """The host for a session's first exec (None: a person's terminal), or ASK when there is
        nothing to find: asked before, or a caller that named no pid (a raw RPC client). Called
        before the task starts, so its few ms never delay the task's first output."""
        if self.finder is None or peer is None or pid is None or (session is not None and session.host_asked):
            return ASK
        try:
            return await asyncio.to_thread(self.finder, peer, pid)
        except Exception:  # an unreadable /proc must not fail the exec
            log.exception("host_lookup_failed")
            return None

    @staticmethod
    def tie(session: Session, found: object) -> None:
        if found is ASK or session.host_asked:
            return
        session.host_asked, session.host = True, found
        if found is not None:
            log.info("session_tied", session_id=session.key.session_id, root=session.key.root,
                     host=session.host.label, host_pid=session.host.pid)

    async def host_of(self, peer: Optional[tuple], pid: Optional[int]) -> Optional[Host]:
        """The agent host a caller runs under, or None (a terminal, no pid, no finder)."""
        found = await self.find(None, peer, pid)
        return None if found is ASK else found  # type: ignore[return-value]

    async def gone(self, sessions: list[Session]) -> list[Session]:
        """Sessions running a task that may not outlive them whose host has exited. The /proc
        reads go to a thread, and only when some session is tied and runs such a task: an idle
        runner's sweep costs nothing here."""
        tied = [s for s in sessions
                if s.host is not None and any(not t.finished and not t.detached for t in s.tasks.values())]
        if not tied:
            return []
        alive = await asyncio.to_thread(lambda: [s.host.alive() for s in tied])
        return [s for s, up in zip(tied, alive) if not up]
