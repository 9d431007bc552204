"""Nothing escapes a task (issue 17.2): `setsid env -i` drops the group and every tag, and still
dies with its task's cgroup on exec:close, on runner stop, and at the boot after a kill -9.
Without cgroups (PLUGKIT_CGROUPS=0) it dies as an orphan the runner adopted while its task lived."""

import os
import signal
import time

import psutil
import pytest

from runner.system import cgroups
from tests.support.escapees import escapees, gone, kill_all, unique_seconds
from tests.support.load import stretched
from tests.support.runner_home import Home, rpc

pytestmark = pytest.mark.e2e


@pytest.fixture
def escapee_seconds():
    """A sleep length no other process on the machine uses: how we find the escapee, which
    carries none of our marks. Killed at teardown should the test fail."""
    seconds = unique_seconds()
    yield seconds
    kill_all(seconds)


TAGS_ONLY = {"PLUGKIT_CGROUPS": "0"}


def start_escapee(home: Home, cwd: str, seconds: str) -> int:
    task = rpc(home, "task.exec", {"session_id": "s", "cwd": cwd, "lang": "bash",
                                   "code": f"setsid env -i sleep {seconds} & echo spawned; sleep 300"})["task"]
    rpc(home, "task.wait", {"session_id": "s", "cwd": cwd, "task_id": task["task_id"],
                            "until_text": "spawned", "timeout_ms": 10_000})
    deadline = time.monotonic() + stretched(5)  # a wait, not a claim: the escapee's exec may lag under load
    while not escapees(seconds) and time.monotonic() < deadline:
        time.sleep(0.02)
    [pid] = escapees(seconds)
    assert "PLUGKIT_TASK_ID" not in psutil.Process(pid).environ()  # the tags are really gone
    return task["task_id"]


def test_this_machine_gives_tasks_a_cgroup():
    # The tests below exercise the cgroup mode; CI's machines (root, a writable cgroup2) have it.
    assert cgroups.detect().name == "cgroup2", cgroups.detect().detail


def test_an_untagged_escapee_dies_on_close_and_its_usage_is_reported(home: Home, tmp_path, escapee_seconds):
    assert home.cli("runner", "start").returncode == 0
    try:
        task_id = start_escapee(home, str(tmp_path), escapee_seconds)
        live = rpc(home, "task.status", {"session_id": "s", "cwd": str(tmp_path), "task_id": task_id})
        assert live["cpu_s"] is not None
        closed = home.cli("exec:close", str(task_id), cwd=str(tmp_path), env={"PLUGKIT_SESSION": "s"})
        assert closed.returncode == 0, closed.stderr
        assert ", cpu " in closed.stdout + closed.stderr, closed  # the person reads it too, not only --json
        assert gone(escapee_seconds)
        # A task that just returns while its escapee runs on: the escapee ends with it.
        seconds = str(int(escapee_seconds) + 1)
        done = rpc(home, "task.exec", {"session_id": "s", "cwd": str(tmp_path), "lang": "bash", "wait_ms": 10_000,
                                       "code": f"setsid env -i sleep {seconds} & sleep 0.2"})
        assert done["task"]["state"] == "completed" and done["task"]["cpu_s"] is not None
        assert gone(seconds)
    finally:
        home.cli("runner", "stop")


def test_an_untagged_escapee_dies_with_runner_stop(home: Home, tmp_path, escapee_seconds):
    assert home.cli("runner", "start").returncode == 0
    try:
        start_escapee(home, str(tmp_path), escapee_seconds)
    finally:
        assert home.cli("runner", "stop").returncode == 0
    assert gone(escapee_seconds)
    # The runner's cgroups went with it: nothing accumulates under the hierarchy run after run.
    mode = cgroups.detect()
    assert not os.path.exists(os.path.join(mode.root, "plugkit", cgroups.home_key(str(home.path))))


def test_an_untagged_escapee_of_a_killed_runner_dies_at_the_next_boot(home: Home, tmp_path, escapee_seconds):
    assert home.cli("runner", "start").returncode == 0
    try:
        start_escapee(home, str(tmp_path), escapee_seconds)
        [pid] = home.runner_pids()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + stretched(5)
        while home.runner_pids() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        assert escapees(escapee_seconds), "the escapee should outlive a kill -9 until the next boot"
        assert home.cli("runner", "start").returncode == 0
        assert gone(escapee_seconds)
    finally:
        home.cli("runner", "stop")
        home.stop_all()


def test_tags_only_an_untagged_escapee_dies_when_its_task_ends(home: Home, tmp_path, escapee_seconds):
    assert home.cli("runner", "start", env=TAGS_ONLY).returncode == 0
    try:
        done = rpc(home, "task.exec", {"session_id": "s", "cwd": str(tmp_path), "lang": "bash", "wait_ms": 10_000,
                                       "code": f"setsid env -i sleep {escapee_seconds} & echo started"})
        assert done["task"]["state"] == "completed"
        assert gone(escapee_seconds, within=15)
        # The sweeper says so (read until its pass has been counted: the kill returns first).
        deadline = time.monotonic() + 10
        while rpc(home, "debug.snapshot")["snapshot"]["reaper"]["orphans_killed"] < 1:
            assert time.monotonic() < deadline, "the escapee died, but not by the sweeper's hand"
            time.sleep(0.05)
    finally:
        home.cli("runner", "stop")


def test_tags_only_an_untagged_escapee_dies_on_close(home: Home, tmp_path, escapee_seconds):
    assert home.cli("runner", "start", env=TAGS_ONLY).returncode == 0
    try:
        task_id = start_escapee(home, str(tmp_path), escapee_seconds)
        closed = home.cli("exec:close", str(task_id), cwd=str(tmp_path), env={"PLUGKIT_SESSION": "s"})
        assert closed.returncode == 0, closed.stderr
        assert gone(escapee_seconds, within=15)
    finally:
        home.cli("runner", "stop")


def test_tags_only_an_untagged_escapee_dies_with_runner_stop(home: Home, tmp_path, escapee_seconds):
    assert home.cli("runner", "start", env=TAGS_ONLY).returncode == 0
    try:
        start_escapee(home, str(tmp_path), escapee_seconds)
    finally:
        assert home.cli("runner", "stop").returncode == 0
    assert gone(escapee_seconds)
