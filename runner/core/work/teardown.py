"""The end of an attempt (issue 48 #3): whatever the attempt started is gone, in any terminal
state (landed, held, rejected, killed, timed out), and its item says what was torn down.

What a worker starts lives in four places. Its own processes are its task's tree: its sandbox's
PID namespace ends them all with it (a `setsid`/`nohup` child included), and its cgroup or
process group without the sandbox (runner/executors/process.py). The `exec:` tasks it asked the
runner for are the runner's tasks in the worker's session: ended here. And a listener on one of
its leased ports that is neither: ended here when it carries this attempt's tags, named and left
alone when it is not ours to kill. Then the port lease goes. And under work_docker, the
containers (forced), the images it built (unless another's container uses one), networks and
volumes carrying its attempt's label, made through its proxy
(runner/core/work/containers.py): removed here, once the proxy is closed.
"""

import asyncio
import os
from typing import Optional

import psutil

from runner.core.tasks.manager import TaskManager
from runner.core.tasks.task import Task
from runner.core.work.model import ItemRun
from runner.system import port_blocks, ports, tags
from runner.system.docker_proxy import DockerProxy


def _its(task: Task, it: ItemRun) -> bool:
    """A task of this attempt: in its worker's session, or run in its worktree (a worker's `exec:`
    names a session of its own choosing, but its capability keeps the cwd inside the worktree)."""
    if it.session_id is not None and task.session.session_id == it.session_id:
        return True
    if it.worktree is None:
        return False
    tree, cwd = os.path.realpath(it.worktree), os.path.realpath(task.cwd or task.session.root)
    return cwd == tree or cwd.startswith(tree + os.sep)


def _ours(home: str, session_id: Optional[str], task_ids: set[int]):
    home_tag = tags.home_id(home)
    ids = {str(i) for i in task_ids}

    def mine(found: Optional[dict], _parents: list[int]) -> bool:
        return bool(found) and found.get(tags.HOME) == home_tag and (
            (session_id is not None and found.get(tags.SESSION_ID) == session_id) or found.get(tags.TASK_ID) in ids)
    return mine


def _free_ports(lease: port_blocks.Lease, home: str, session_id: Optional[str],
                task_ids: set[int]) -> tuple[list[str], list[str]]:
    """Blocking: each listener left on the lease's ports, ended if it is this attempt's.
    Returns (what was ended, what was not)."""
    said: list[str] = []
    notes: list[str] = []
    for port in lease.ports:
        try:
            freed, alive = ports.kill_port(port, {os.getpid(): "the plugkit runner"}, grace_s=0.5,
                                           mine=_ours(home, session_id, task_ids))
        except ports.KillRefused as exc:
            notes.append(f"left alone: {exc}")
            continue
        except (OSError, psutil.Error) as exc:  # /proc unreadable here: say so, never stop the attempt's end
            notes.append(f"port {port} not looked at ({exc.__class__.__name__})")
            continue
        said += [f"pid {f.pid} ({' '.join(f.command.split())[:80]}) listening on {port}" for f in freed]
        notes += [f"pid {pid} on {port} did not die" for pid in alive]
    return said, notes


async def end(tasks: TaskManager, home: Optional[str], it: ItemRun,
              lease: Optional[port_blocks.Lease], docker: Optional[DockerProxy] = None) -> None:
    """Ends what the attempt left running, releases its ports, removes its containers, and sets
    it.teardown (None when there was nothing to end)."""
    said: list[str] = []
    notes: list[str] = []
    removed: list[str] = []
    left = [t for t in tasks.all_tasks() if not t.finished and _its(t, it)]
    await asyncio.gather(*(tasks.end(t, "killed", "attempt_ended") for t in left), return_exceptions=True)
    said += [f"task_{t.id} ({t.lang}: {(t.command or '').strip()[:80]})" for t in left]
    # Its own tasks' ids too: an escapee of the worker's tree (no sandbox, no cgroup) carries its tags.
    ids = {t.id for t in left} | {i for i in (it.task_id, it.setup_task_id, it.verify_task_id) if i is not None}
    try:
        # After its tasks (none is left to make another container), before its ports: a port a
        # container published is held by the engine's proxy, not ours to kill, until it goes.
        if docker is not None:
            removed, notes = await docker.end()
    finally:
        if lease is not None:
            await _release(lease, home, it, ids, said, notes)
    # Nothing to say when its processes all ended with its sandbox or process group: no line.
    parts = (["ended " + "; ".join(said)] if said else []) + (["removed " + "; ".join(removed)] if removed else [])
    it.teardown = "teardown: " + "; ".join(parts + notes) if parts or notes else None


async def _release(lease: port_blocks.Lease, home: Optional[str], it: ItemRun, ids: set[int],
                   said: list[str], notes: list[str]) -> None:
    """The lease's listeners that are the attempt's ended (said, notes extended), then the lease."""
    try:
        if home is not None:
            ended, port_notes = await asyncio.to_thread(_free_ports, lease, home, it.session_id, ids)
            said += ended
            notes += port_notes
    finally:
        lease.release()
