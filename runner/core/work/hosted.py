"""HostedAttempts: the attempts this runner runs for a supervisor on another machine
(`plugkit work --runtime ray`: the node's runner; the node side starts each attempt's worker
here through work.run).

The worker is a task of this runner, started by the same worker executor as a local worker (its
sandbox, the capability scoped to its worktree that the sandbox shows at the token's path, its
relay under `--network loopback-model`, its cgroup and the kill of its tree), and it is met the
way a local runner meets its own worker: the hook path routes a call carrying its session tag
to the worker policy, the commit check and the item's context (runner/core/work/hooks.py), and
its `exec:` code meets the policy. Each hook call it makes here is counted: the node side
relays the count to the supervisor as the worker's heartbeat (work.read).

Its owner, the Ray worker process running the attempt, is watched by a pidfd
(runner/system/pidfd_watch.py): when it ends (a force cancel, the raylet killing it) the task is
killed with everything it started and the hosting goes. No guard process, no poll of /proc.

Memory only, so a restarted runner hosts nothing (its capabilities and relays died with it).
"""

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Optional

from runner.core.work.model import with_refused
from runner.system import pidfd_watch


@dataclass
class Hosted:
    """One hosted attempt. Its field names are ItemRun's where the hooks read them (id, attempt,
    worktree, branch, stop_blocked): the same hook code answers both."""
    run: str
    id: str  # the item
    attempt: int
    session_id: str
    worktree: str  # realpath
    branch: str
    base: str  # the commit it started from: the Stop check counts commits ahead of it
    owner: int  # the pid of the node-side process holding it (the Ray worker process)
    network: str = "host"  # plugkit.vocab.WORK_NETWORKS
    beats: int = 0
    refused: list[str] = field(default_factory=list)  # its calls the capability refused, newest last
    refusals: int = 0  # how many ever (the list keeps the last MAX_REFUSED): the node side relays new ones
    stop_blocked: int = 0  # the attempt number whose Stop was turned back (once per attempt)
    task: Any = None  # the worker's task on this runner, once started
    stop: Optional[Callable[[], Awaitable[None]]] = None  # ends that task (its whole tree)
    watch: Optional[pidfd_watch.Watch] = None  # its owner's end


class HostedAttempts:
    def __init__(self) -> None:
        self._by_session: dict[str, Hosted] = {}
        self._stopping: set[asyncio.Task] = set()  # tasks of owners gone, being ended

    def host(self, h: Hosted) -> Hosted:
        """Registers it (an earlier hosting of the same session is ended first) and watches its
        owner. ProcessLookupError: the owner is gone already."""
        self.unhost(h.session_id)
        h.worktree = os.path.realpath(h.worktree)
        try:
            h.watch = pidfd_watch.watch(h.owner, lambda: self._owner_gone(h))
        except ProcessLookupError:
            raise ProcessLookupError(f"no process {h.owner} to hold the attempt") from None
        self._by_session[h.session_id] = h
        return h

    def set_task(self, h: Hosted, task: Any, stop: Callable[[], Awaitable[None]]) -> None:
        """Its worker's task, and how to end it: ended when its owner goes or it is unhosted."""
        if self._by_session.get(h.session_id) is not h:  # its owner went while the task was starting
            self._end(stop)
            return
        h.task, h.stop = task, stop

    def _owner_gone(self, h: Hosted) -> None:
        if self._by_session.get(h.session_id) is h:
            self.unhost(h.session_id)

    def _end(self, stop: Callable[[], Awaitable[None]]) -> None:
        ending = asyncio.ensure_future(stop())
        self._stopping.add(ending)
        ending.add_done_callback(self._stopping.discard)

    def unhost(self, session_id: str, end_task: bool = True) -> bool:
        """Ends the hosting; a task it holds is ended too (in the background: work.unhost awaits
        it itself). end_task False: the runner is stopping, and its task manager kills every task."""
        h = self._by_session.pop(session_id, None)
        if h is None:
            return False
        if h.watch is not None:
            h.watch.cancel()
        if h.stop is not None and end_task:
            self._end(h.stop)
        return True

    def close(self) -> None:
        """The runner stops: nothing stays hosted."""
        for session_id in list(self._by_session):
            self.unhost(session_id, end_task=False)

    def at(self, cwd: str, session_id: Optional[str] = None) -> Optional[Hosted]:
        """The hosted attempt whose worktree holds cwd (and, when given, whose session this is),
        its heartbeat counted; None elsewhere. Costs nothing on a runner hosting nothing."""
        if not self._by_session:
            return None
        real = os.path.realpath(cwd)
        for h in self._by_session.values():
            if (real == h.worktree or real.startswith(h.worktree + os.sep)) and session_id in (None, h.session_id):
                h.beats += 1
                return h
        return None

    def get(self, session_id: str) -> Optional[Hosted]:
        """The hosted attempt of this session, or None when it is not hosted (any more)."""
        return self._by_session.get(session_id)

    def refused(self, session_id: str, what: str) -> None:
        """Its call the capability refused: kept for the node side to relay to the item."""
        h = self._by_session.get(session_id)
        if h is not None:
            h.refused = with_refused(h.refused, what)
            h.refusals += 1

    def __len__(self) -> int:
        return len(self._by_session)

    def snapshot(self) -> dict:
        return {s: {"item": h.id, "attempt": h.attempt, "worktree": h.worktree, "beats": h.beats,
                    "owner": h.owner, "task": f"task_{h.task.id}" if h.task is not None else None}
                for s, h in self._by_session.items()}
