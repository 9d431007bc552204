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


# peer address -> the agent host above it (blocking: scans /proc), or None
HostFinder = Callable[[tuple], Optional[Host]]


class HostTies:
    def __init__(self, finder: Optional[HostFinder]) -> None:
        self.finder = finder

    async def tie(self, session: Session, peer: Optional[tuple]) -> None:
        """Once per session (a person's terminal finds none, and is not asked again)."""
        if self.finder is None or peer is None or session.host_asked:
            return
        session.host_asked = True
        try:
            session.host = await asyncio.to_thread(self.finder, peer)
        except Exception:  # an unreadable /proc must not fail the exec
            log.exception("host_lookup_failed")
            return
        if session.host is not None:
            log.info("session_tied", session_id=session.key.session_id, root=session.key.root,
                     host=session.host.label, host_pid=session.host.pid)

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
