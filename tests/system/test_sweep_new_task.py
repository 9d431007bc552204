"""The sweeper's stray scan (runner/core/tasks/sweeper.py sweep_once) never kills a task that started
while it scanned: which tasks are live is asked after the scan. Real tagged processes; the manager is
a stand-in whose task 7 starts (and its process appears) the moment the sweep asks what is live."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from types import SimpleNamespace

from runner.core.tasks import sweeper
from runner.system import tags
from runner.system.kill import find_tagged, kill_runner_tasks
from tests.support import procs

SLEEPER = [sys.executable, "-c", "import time; time.sleep(300)"]


def _tagged(runner_id: str, task_id: str) -> subprocess.Popen:
    env = tags.child_env(os.environ, None, {tags.RUNNER_ID: runner_id, tags.TASK_ID: task_id})
    return subprocess.Popen(SLEEPER, env=env, stdin=subprocess.DEVNULL, start_new_session=True)


class Manager:
    """Task 7 is started by the loop right as the sweep first asks what runs: not live in that
    answer, live (with its process) from then on. Task 3 ended before the sweep; its process stayed."""

    def __init__(self, runner_id: str) -> None:
        self.runner_id, self.started = runner_id, []

    def managed_pids(self) -> set[int]:
        return set()

    def running(self) -> list:
        if not self.started:
            self.started.append(_tagged(self.runner_id, "7"))
            return []
        return [SimpleNamespace(id=7)]


def test_a_task_started_during_the_scan_is_not_a_stray_but_an_ended_tasks_process_is():
    runner_id = f"sweep-{uuid.uuid4().hex[:8]}"
    ended = _tagged(runner_id, "3")
    manager = Manager(runner_id)
    try:
        assert find_tagged(runner_id, "3")  # Popen returned after its exec: its tags are there
        _reaped, strays, _orphans = sweeper.sweep_once(manager, runner_id, grace_s=0.2)
        assert strays == [("3", ended.pid)] and ended.wait(timeout=30) is not None
        [new] = manager.started
        assert procs.alive(new.pid) and [p.pid for p in find_tagged(runner_id, "7")] == [new.pid]
    finally:
        kill_runner_tasks(runner_id, grace_s=0.2)
        for proc in [ended, *manager.started]:
            proc.wait(timeout=30)
