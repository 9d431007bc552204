"""The periodic sweep: reap adopted zombies, kill strays of finished tasks.

A task's root can exit while a setsid'd grandchild it left behind keeps running
outside the task's process group; only its environment tag still names the task.
One /proc scan per interval covers every task that ended since the last one.
Without a cgroup per task (tags-only mode), an escapee that also dropped its tags is
found among the runner's adopted children instead (runner/core/tasks/adopted.py).
"""

import asyncio
from dataclasses import dataclass, field
from typing import Callable

from runner.system import logs
from runner.core.tasks.manager import TaskManager
from runner.system import kill as kill_mod
from runner.system import subreaper, tags

log = logs.get("plugkit.sweeper")


@dataclass
class SweepStats:
    sweeps: int = 0
    strays_killed: int = 0
    zombies_reaped: int = 0
    orphans_killed: int = 0
    orphans_held: int = 0
    idle_sessions_ended: int = 0
    host_gone_killed: int = 0  # tasks killed because their session's agent host exited
    last_error: str | None = None
    recent: list[dict] = field(default_factory=list)


def _strays(runner_id: str, live_ids: Callable[[], set[str]]) -> list[tuple[str, int]]:
    tagged = []
    for proc in kill_mod.find_tagged(runner_id):
        task_id = (tags.read_tags(proc.pid) or {}).get(tags.TASK_ID)
        # Only task ids are numbers: a non-numeric tag is a runner-wide helper such as the
        # browser ("browser"), which outlives every task and is stopped by its executor.
        if task_id and task_id.isdecimal():
            tagged.append((task_id, proc.pid))
    # Which tasks are live is asked after the scan, never before: a task is live before its
    # process exists, so every process the scan found belongs to a task that is in this set
    # unless it has ended. Asked first, a task the loop started while this thread scanned
    # was not in it, and its new process was killed as a stray of a finished task.
    live = live_ids()
    return [(task_id, pid) for task_id, pid in tagged if task_id not in live]


def _helper(pid: int, runner_id: str) -> bool:
    """A runner-wide helper's process (a Chromium child left by its parent): its executor stops it."""
    found = tags.read_tags(pid) or {}
    task_id = found.get(tags.TASK_ID)
    return found.get(tags.RUNNER_ID) == runner_id and task_id is not None and not task_id.isdecimal()


def list_adopted(manager: TaskManager, runner_id: str) -> list[tuple[tuple[int, int], bool]]:
    """Blocking (a worker thread): our adopted children that are no task's root, each with
    whether it is a runner helper's. The attribution itself is the loop's (held_orphans)."""
    roots = manager.managed_pids()
    return [(o, _helper(o[0], runner_id)) for o in subreaper.adopted_children() if o[0] not in roots]


def held_orphans(manager: TaskManager, listed: list[tuple[tuple[int, int], bool]]) -> list[tuple[int, int]]:
    """On the loop: the listed children the attribution rule covers (a helper's child only when
    it was held as an orphan before)."""
    return [o for o, helper in listed if not helper or manager.adopted.attributed(o) is not None]


def kill_orphans(orphans: list[tuple[int, int]], grace_s: float) -> list[tuple[int, int]]:
    """Kill each; return those that were still there to kill (one that exited on its own is not counted)."""
    killed = []
    for pid, ticks in orphans:
        report = kill_mod.kill_adopted(pid, ticks, grace_s=grace_s)
        if report.terminated or report.killed:
            killed.append((pid, ticks))
    return killed


async def due_orphans(manager: TaskManager, runner_id: str) -> list[tuple[int, int]]:
    """Attribute new orphans to the tasks around them (on the loop, where tasks start and end:
    the attribution needs no lock); those whose tasks have all ended are due to be killed."""
    listed = await asyncio.to_thread(list_adopted, manager, runner_id)  # listed before the take: see adopted.py
    return manager.adopted.observe(held_orphans(manager, listed))


async def stop_adopted(manager: TaskManager, runner_id: str, grace_s: float) -> list[tuple[int, int]]:
    """Runner stop: every remembered orphan and any adopted since (the last tasks' kill) dies."""
    listed = await asyncio.to_thread(list_adopted, manager, runner_id)
    pending = set(manager.adopted.take_all()) | set(held_orphans(manager, listed))
    return await asyncio.to_thread(kill_orphans, sorted(pending), grace_s)


def sweep_once(manager: TaskManager, runner_id: str, grace_s: float,
               scan: bool = True, due: list[tuple[int, int]] | None = None
               ) -> tuple[list[int], list[tuple[str, int]], list[tuple[int, int]]]:
    """Blocking; run in a thread. Returns (reaped zombie pids, (task id, pid) strays killed,
    (pid, start ticks) adopted orphans killed: those `due`, from due_orphans on the loop).
    Reaping and adoption read only our own children; the stray scan reads every process's
    environment."""
    reaped = subreaper.reap_adopted(manager.managed_pids())
    orphans = kill_orphans(due, grace_s) if due else []
    if not scan:
        return reaped, [], orphans
    strays = _strays(runner_id, lambda: {str(t.id) for t in manager.running()})
    for task_id in sorted({t for t, _ in strays}):
        kill_mod.kill_tree(pgid=None, root=None, runner_id=runner_id, task_id=task_id, grace_s=grace_s)
    return reaped, strays, orphans


# A scan of every process's environment holds the GIL for milliseconds: it runs when a
# task has ended (its strays are what it looks for), again while it keeps finding some,
# and otherwise only as a once-a-minute backstop, so an idle runner answers without jitter.
BACKSTOP_PASSES = 60


async def sweep_loop(manager: TaskManager, runner_id: str, stats: SweepStats, interval_s: float = 1.0,
                     grace_s: float = 0.2, adopt: bool = False) -> None:
    """adopt: hold adopted orphans to their tasks (tags-only mode; a task's cgroup does it otherwise)."""
    seen_finished = -1
    quiet_passes = 0
    found_last = False
    while True:
        await asyncio.sleep(interval_s)
        stats.idle_sessions_ended += len(manager.expire_idle())
        try:
            stats.host_gone_killed += len(await manager.end_gone_hosts())
        except Exception:  # a session's end failing must not stop the sweep
            log.exception("host_sweep_failed")
        finished = sum(manager.finished_counts.values())
        quiet_passes += 1
        scan = finished != seen_finished or found_last or quiet_passes >= BACKSTOP_PASSES
        if scan:
            seen_finished, quiet_passes = finished, 0
        try:
            due = await due_orphans(manager, runner_id) if adopt else None
            reaped, strays, orphans = await asyncio.to_thread(sweep_once, manager, runner_id, grace_s, scan, due)
        except Exception as exc:  # the loop must survive a bad /proc read
            stats.last_error = exc.__class__.__name__
            log.exception("sweep_failed")
            continue
        found_last = bool(strays)
        stats.sweeps += 1 if scan else 0
        stats.zombies_reaped += len(reaped)
        stats.strays_killed += len(strays)
        stats.orphans_killed += len(orphans)
        stats.orphans_held = len(manager.adopted)
        for pid, _ticks in orphans:
            log.info("adopted_orphan_killed", pid=pid)
        for task_id, pid in strays:
            log.info("stray_killed", task_id=int(task_id), pid=pid)
