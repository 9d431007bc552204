"""The boot reaper: kill what dead runners of this PLUGKIT_HOME left running.

A runner killed with -9 (OOM, a crash, a laptop lid) cannot clean up; its
tasks carry PLUGKIT_HOME_ID (the home by hash) and PLUGKIT_RUNNER_ID in their environment, and the
runner id names the runner's pid. At the next boot, before the port is bound,
every process tagged with our home whose runner is no longer alive is killed
with its whole tagged tree. Live runners, other homes, other users and
untagged processes are never touched.
"""

import os
import time
from dataclasses import dataclass

import psutil

from runner.system import cgroups
from runner.system import kill as kill_mod
from runner.system import tags


@dataclass(frozen=True)
class ReapReport:
    runners: tuple[str, ...]   # dead runner ids whose processes were found
    trees: tuple[tuple[str, str, tuple[int, ...]], ...]  # (runner id, task id, pids seen) per tree
    killed: int                # processes signalled
    survivors: tuple[int, ...]
    elapsed_s: float


def make_runner_id(pid: int, token: str) -> str:
    """`<pid>-<random>`: the pid lets a later boot tell a dead runner from a live one."""
    return f"{pid}-{token}"


def _runner_alive(runner_id: str) -> bool:
    pid_text, _, _ = runner_id.partition("-")
    try:
        proc = psutil.Process(int(pid_text))
        # A reused pid that is not a runner means the runner is gone. A reused pid
        # that is another runner errs on the safe side: its tasks are left alone.
        return proc.status() != psutil.STATUS_ZOMBIE and "runner" in proc.cmdline()
    except (psutil.Error, ValueError):
        return False


def tagged_runner_ids(home: str) -> dict[str, dict[str, list[int]]]:
    """runner id -> task id -> pids of this user's processes tagged with our home."""
    needle = f"\0{tags.HOME}={tags.home_id(home)}\0".encode()
    found: dict[str, list[int]] = {}
    me, uid = os.getpid(), os.getuid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        pid = int(name)
        raw = tags.read_environ(pid)
        if not raw or needle not in b"\0" + raw + b"\0":
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
        except OSError:
            continue
        found_tags = tags.read_tags(pid) or {}
        runner_id = found_tags.get(tags.RUNNER_ID)
        if runner_id:
            task_id = found_tags.get(tags.TASK_ID, "?")
            found.setdefault(runner_id, {}).setdefault(task_id, []).append(pid)
    return found


def reap_orphans(home: str, live_runner_id: str, grace_s: float = 0.5) -> ReapReport:
    """Blocking: kill every tagged tree of our home whose runner is dead."""
    began = time.monotonic()
    tagged = tagged_runner_ids(home)
    dead = [rid for rid in tagged if rid != live_runner_id and not _runner_alive(rid)]
    killed, survivors = 0, []
    for runner_id in dead:
        # One kill per dead runner: its sweep re-scans until every tagged process is gone.
        report = kill_mod.kill_runner_tasks(runner_id, grace_s=grace_s)
        killed += len(set(report.terminated) | set(report.killed))
        survivors.extend(report.survivors)
    # Task cgroups of dead runners: escapees that dropped their tags (`env -i`) are only there.
    for runner_id in cgroups.reap_dead_runners(home, live_runner_id, _runner_alive):
        if runner_id not in dead:
            dead.append(runner_id)
            tagged.setdefault(runner_id, {})
    trees = tuple((rid, task_id, tuple(sorted(pids)))
                  for rid in dead for task_id, pids in sorted(tagged[rid].items()))
    return ReapReport(tuple(dead), trees, killed, tuple(survivors), time.monotonic() - began)
