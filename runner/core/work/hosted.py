"""HostedAttempts: the attempts this runner hosts for a supervisor on another machine
(`plugkit work --runtime ray`: the node's runner; the node side registers each attempt it
runs here through work.host).

A hosted attempt is met the way a local runner meets its own worker: the hook path routes a
call carrying its session tag to the worker policy, the commit check and the item's context
(runner/core/work/hooks.py), its `exec:` code meets the policy, and it holds a capability
scoped to its worktree, minted by the same code as a local worker's. Each hook call it makes
here is counted: the node side relays the count to the supervisor as the worker's heartbeat.

Under `--network loopback-model` this runner also holds the worker's relay, as it does for its
own workers (runner/system/netrelay.py): the worker's namespace reaches its model endpoints
and this runner, nothing else.

The node side asks this runner to RUN the worker too (work.run): the worker is then a task of
this runner, started by the same worker executor as a local worker (its sandbox, its capability,
its relay, its cgroup and the kill of its tree), and the hosting holds that task. Its owner, the
Ray worker process running the attempt, is watched by a pidfd (runner/system/pidfd_watch.py):
when it ends (a force cancel, the raylet killing it) the task is killed with everything it
started, and the hosting goes. No guard process polls for it.

Memory only, so a restarted runner hosts nothing (its capabilities and relays died with it). An
attempt whose owner is gone is dropped when the kernel says so (run) or on the next look (host
only): a force-cancelled Ray task never reaches its own unhost.
"""

import asyncio
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Optional

import psutil

from plugkit.work.capabilities import Capabilities, Capability
from runner.core.work.model import with_refused
from runner.executors.worker import drop_file, mint_file, relay_targets
from runner.system import netrelay, pidfd_watch


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
    owner: tuple[int, float]  # (pid, create time) of the node-side process holding it
    token: str = ""
    capability: str = ""  # the file holding the token
    network: str = "host"  # plugkit.vocab.WORK_NETWORKS
    relay: Optional[netrelay.Relay] = None  # its loopback-only network's outside half, held here
    beats: int = 0
    refused: list[str] = field(default_factory=list)  # its calls the capability refused, newest last
    refusals: int = 0  # how many ever (the list keeps the last MAX_REFUSED): the node side relays new ones
    stop_blocked: int = 0  # the attempt number whose Stop was turned back (once per attempt)
    task: Any = None  # run here (work.run): the worker's task on this runner
    stop: Optional[Callable[[], Awaitable[None]]] = None  # ends that task (its whole tree)
    watch: Optional[pidfd_watch.Watch] = None  # its owner's end (run here)


def _started(pid: int) -> Optional[float]:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


class HostedAttempts:
    def __init__(self, capabilities: Capabilities, home: str) -> None:
        self.capabilities, self.home = capabilities, os.path.abspath(home)
        self._by_session: dict[str, Hosted] = {}
        self._stopping: set[asyncio.Task] = set()  # tasks of owners gone, being ended

    async def host(self, h: Hosted, environ: dict[str, str], port: int, run: bool = False) -> Hosted:
        """Registers it (an earlier hosting of the same session is ended first), mints its
        capability and, for a loopback-only network, starts its relay to the endpoints `environ`
        names and to this runner on `port`. `h.owner` holds the pid only: its start time is read here.
        run: its worker will be this runner's task (set_task), whose worker executor mints the
        capability and holds the relay as for a local worker; the owner's end is watched here."""
        self.unhost(h.session_id)
        started = _started(h.owner[0])
        if started is None:
            raise ProcessLookupError(f"no process {h.owner[0]} to hold the attempt")
        h.owner = (h.owner[0], started)
        h.worktree = os.path.realpath(h.worktree)
        if run:
            h.watch = pidfd_watch.watch(h.owner[0], lambda: self._owner_gone(h))
            self._by_session[h.session_id] = h
            return h
        if h.network != "host":
            targets = relay_targets(environ, port)  # Unavailable before anything is held
            h.relay = await netrelay.open_relay(tempfile.mkdtemp(prefix="plugkit-hosted-") + ".net", targets)
        h.token, h.capability = mint_file(self.capabilities, self.home,
                                          Capability(h.run, h.id, h.session_id, h.worktree, h.network))
        self._by_session[h.session_id] = h
        return h

    def set_task(self, session_id: str, task: Any, stop: Callable[[], Awaitable[None]]) -> None:
        """The worker's task of a hosting made with run=True, and how to end it: ended when its
        owner goes or it is unhosted."""
        h = self._by_session[session_id]
        h.task, h.stop = task, stop
        if h.watch is not None and not h.watch.active:  # the owner went while the task was starting
            self._owner_gone(h)

    def _owner_gone(self, h: Hosted) -> None:
        if self._by_session.get(h.session_id) is h:
            self.unhost(h.session_id)

    def unhost(self, session_id: str, end_task: bool = True) -> bool:
        """Ends the hosting; a task it holds is ended too (in the background: work.unhost awaits
        it itself). end_task False: the runner is stopping, and its task manager kills every task."""
        h = self._by_session.pop(session_id, None)
        if h is None:
            return False
        if h.watch is not None:
            h.watch.cancel()
        if h.stop is not None and end_task:
            ending = asyncio.ensure_future(h.stop())
            self._stopping.add(ending)
            ending.add_done_callback(self._stopping.discard)
        if h.token:
            drop_file(self.capabilities, h.token, h.capability)
        if h.relay is not None:
            h.relay.abort()
            shutil.rmtree(h.relay.folder, True)
            os.rmdir(h.relay.folder.removesuffix(".net"))
        return True

    def close(self) -> None:
        """The runner stops: nothing stays hosted."""
        for session_id in list(self._by_session):
            self.unhost(session_id, end_task=False)

    def _prune(self) -> None:
        gone = [s for s, h in self._by_session.items() if _started(h.owner[0]) != h.owner[1]]
        for session_id in gone:
            self.unhost(session_id)

    def at(self, cwd: str, session_id: Optional[str] = None) -> Optional[Hosted]:
        """The hosted attempt whose worktree holds cwd (and, when given, whose session this is),
        its heartbeat counted; None elsewhere. Costs nothing on a runner hosting nothing."""
        if not self._by_session:
            return None
        self._prune()
        real = os.path.realpath(cwd)
        for h in self._by_session.values():
            if (real == h.worktree or real.startswith(h.worktree + os.sep)) and session_id in (None, h.session_id):
                h.beats += 1
                return h
        return None

    def get(self, session_id: str) -> Optional[Hosted]:
        """The hosted attempt of this session, or None when it is not hosted (any more)."""
        self._prune()
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
                    "owner": h.owner[0], "task": f"task_{h.task.id}" if h.task is not None else None}
                for s, h in self._by_session.items()}
