"""Context: what every RPC method receives, typed field by field, built once by the
composition root (runner/boot/compose.py); Runtime, the runner's live state in it; PEER, who is
calling on the request being served."""

import asyncio
import contextvars
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Optional

from plugkit import __version__
from plugkit.config import RunnerConfig
from plugkit.lazy import Lazy
from runner.core.tasks.manager import TaskManager
from runner.core.tasks.sweeper import SweepStats
from runner.rpc.hook_memory import HookMemory
from plugkit.work.capabilities import Capabilities, Capability
from runner.core.work.hosted import Hosted, HostedAttempts

if TYPE_CHECKING:  # the lifecycle model costs tens of milliseconds to import: only on first use
    from runner.core.gates.manager import GateManager
    from runner.core.work.manager import WorkManager
    from runner.core.search.manager import SearchManager


# The peer address (host, port) of the request being served: set by the HTTP layer per
# request, read by the methods that must know their caller (approval.grant).
PEER: contextvars.ContextVar[Optional[tuple]] = contextvars.ContextVar("plugkit_peer", default=None)
# The worker capability the request being served was made with (plugkit/work/capabilities.py),
# None for the runner's own token: set by the HTTP guard on every request, read by
# runner/rpc/scope.py. Every request sets it: requests on one keep-alive connection share a task.
CALLER: contextvars.ContextVar[Optional[Capability]] = contextvars.ContextVar("plugkit_caller", default=None)

# Upper bounds in milliseconds; the last bucket catches the rest.
BUCKETS_MS = (0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 1000, float("inf"))


class Latency:
    """Per-method latency histograms, cheap enough to record on every call."""

    def __init__(self) -> None:
        self._hist: dict[str, list[int]] = {}

    def record(self, method: str, seconds: float) -> None:
        counts = self._hist.setdefault(method, [0] * len(BUCKETS_MS))
        ms = seconds * 1000
        for i, bound in enumerate(BUCKETS_MS):
            if ms <= bound:
                counts[i] += 1
                return

    def snapshot(self) -> dict[str, dict[str, int]]:
        labels = [f"le_{b:g}ms" if b != float("inf") else "inf" for b in BUCKETS_MS]
        return {m: dict(zip(labels, c)) for m, c in self._hist.items()}


@dataclass
class Runtime:
    """Owned by the app (stored under an AppKey); one per runner start."""

    home: str
    port: int
    token: str
    runner_id: str
    started_at: float = field(default_factory=time.time)
    pid: int = field(default_factory=os.getpid)
    version: str = __version__
    shutdown: asyncio.Event = field(default_factory=asyncio.Event)
    requests: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    latency: Latency = field(default_factory=Latency)
    boot_reap: dict = field(default_factory=dict)
    # The in-place restart (runner/boot/handover.py), bound by serve() to this image's socket and
    # lock; None where the runner was composed without them (tests in one process).
    restart: Optional[Callable[[], Awaitable[Any]]] = None

    def uptime(self) -> float:
        return max(0.0, time.time() - self.started_at)


@dataclass(eq=False)
class Context:
    """The runner's parts, one typed field each. The composition root builds every part
    before the app starts and freezes it (CONVENTIONS 17); lifespans only start and stop them.
    After freeze() a part is never swapped: a handler that rebinds one is a bug, refused loudly."""

    runtime: Runtime
    config: RunnerConfig
    tasks: TaskManager
    sweeper: SweepStats = field(default_factory=SweepStats)
    hooks: HookMemory = field(default_factory=HookMemory)
    # The sandboxed workers' capabilities: the worker executor mints them, the HTTP guard reads them.
    capabilities: Capabilities = field(default_factory=Capabilities)
    # The attempts this runner hosts for a supervisor elsewhere (a Ray node's runner): work.run.
    # None: built from the capabilities and the home below (the composition root passes its own).
    hosted: Optional[HostedAttempts] = None
    # Built on first use. None: a runner composed without gates; every hook call is allowed.
    gates: "Optional[Lazy[GateManager]]" = None
    # `plugkit work` runs, built on the first work.* call (needs the gates). None without gates.
    work: "Optional[Lazy[WorkManager]]" = None
    # Code search's per-workspace indexes, built on the first search.* call.
    search: "Optional[Lazy[SearchManager]]" = None
    # name -> () -> dict for debug.snapshot: registered by what is running now, removed when it stops.
    snapshots: dict[str, Callable[[], Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.hosted is None:
            self.hosted = HostedAttempts()

    def freeze(self) -> "Context":
        object.__setattr__(self, "_frozen", True)
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_frozen", False):
            raise AttributeError(f"the runner's Context is frozen after composition: {name} cannot be rebound")
        object.__setattr__(self, name, value)

    def gate_manager(self) -> "GateManager":
        """The gates, built now if this is their first use (gate.*, mutable.*, prd.*, ...)."""
        if self.gates is None:
            raise RuntimeError("this runner was composed without gates")
        return self.gates.get()

    def work_manager(self) -> "WorkManager":
        if self.work is None:
            raise RuntimeError("this runner was composed without gates, so without plugkit work")
        return self.work.get()

    def search_manager(self) -> "SearchManager":
        if self.search is None:
            raise RuntimeError("this runner was composed without code search")
        return self.search.get()

    def worker_at(self, cwd: str):
        """The live `plugkit work` worker whose worktree holds cwd (its heartbeat counted), else
        None; never builds the work manager (a runner that never ran `plugkit work` pays nothing)."""
        manager = self.work.peek() if self.work is not None else None
        return manager.worker_at(cwd) if manager is not None else None

    def journal_of(self, it: Any):
        """The journal of the live `plugkit work` run a worker `it` belongs to, else None (a hosted
        worker's is its supervisor's, elsewhere)."""
        manager = self.work.peek() if self.work is not None else None
        return manager.traced(it) if manager is not None else None

    def hosted_at(self, cwd: str, session_id: Optional[str] = None) -> Optional[Hosted]:
        """The attempt hosted for a remote supervisor whose worktree holds cwd (its heartbeat
        counted), else None."""
        return self.hosted.at(cwd, session_id) if self.hosted is not None else None
