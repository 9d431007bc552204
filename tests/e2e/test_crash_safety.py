"""A runner killed with -9 loses nothing: orphans are reaped at the next boot, other homes untouched."""

import contextlib
import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest

from client.wire.rpc import RpcFailure
from runner.system import tags
from tests.support.runner_home import Home, free_port, rpc

pytestmark = pytest.mark.e2e
FIX = Path(__file__).resolve().parent.parent / "fixtures"
PROGRAMS = [
    f"exec {sys.executable} {FIX / 'ignores_term.py'}",
    f"exec {sys.executable} {FIX / 'setsid_escape.py'}",
    f"exec {sys.executable} {FIX / 'forks_children.py'} 3",
    "sleep 300",
]
SILENT = "sleep 300"  # prints nothing to wait for: its process is there once task.exec answered


def tagged(home: Home) -> set[int]:
    found = set()
    for p in psutil.process_iter():
        try:
            env = p.environ()
            if env.get(tags.HOME) == tags.home_id(str(home.path)) and env.get("PLUGKIT_TASK_ID") \
                    and p.status() != psutil.STATUS_ZOMBIE:
                found.add(p.pid)
        except psutil.Error:
            continue
    return found


def start_tasks(home: Home, cwd: str, sessions=("a", "b", "c")) -> list[tuple[str, int]]:
    started = []
    for i in range(10):
        session = sessions[i % len(sessions)]
        res = rpc(home, "task.exec", {"session_id": session, "cwd": cwd, "lang": "bash",
                                      "code": PROGRAMS[i % len(PROGRAMS)]})
        started.append((session, res["task"]["task_id"]))
    # A double fork that exits at once leaves only its setsid daemon behind.
    rpc(home, "task.exec", {"session_id": "a", "cwd": cwd, "lang": "bash", "wait_ms": 10_000,
                            "code": f"exec {sys.executable} {FIX / 'double_fork.py'}"})
    for i, (session, task_id) in enumerate(started):
        if PROGRAMS[i % len(PROGRAMS)] == SILENT:
            continue  # a wait for "ready" would only run out its 3 s
        rpc(home, "task.wait", {"session_id": session, "cwd": cwd, "task_id": task_id,
                                "until_regex": r"ready|child \d+", "timeout_ms": 3000})
    return started


def wait_until(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def runner_pid(home: Home) -> int:
    return home.discovery()["pid"]


def test_kill_9_then_restart_reaps_every_orphan(home, tmp_path):
    assert home.cli("runner", "start").returncode == 0
    cwd = str(tmp_path)
    done = rpc(home, "task.exec", {"session_id": "a", "cwd": cwd, "lang": "bash", "wait_ms": 10_000,
                                   "code": "for i in $(seq 3); do echo line $i; done"})["task"]
    started = start_tasks(home, cwd)
    old = tagged(home)
    assert len(old) >= 14
    os.kill(runner_pid(home), signal.SIGKILL)
    wait_until(lambda: not home.runner_pids(), 5)
    assert old <= tagged(home)  # nobody cleaned up: the orphans are really there
    assert home.cli("runner", "start").returncode == 0
    assert wait_until(lambda: not (old & tagged(home)), 5), old & tagged(home)
    info = rpc(home, "runner.info")
    assert info["reaper"]["boot_dead_runners"] == 1 and info["reaper"]["boot_killed"] >= len(old) - 4
    # The ledger tells the truth about every old task after the crash.
    for session, task_id in started:
        status = rpc(home, "task.status", {"session_id": session, "cwd": cwd, "task_id": task_id})
        assert (status["state"], status["reason"]) == ("killed", "runner_lost"), status
    old_done = rpc(home, "task.status", {"session_id": "a", "cwd": cwd, "task_id": done["task_id"]})
    assert old_done["state"] == "completed" and old_done["exit_code"] == 0
    tail = rpc(home, "task.output", {"session_id": "a", "cwd": cwd, "task_id": done["task_id"], "cursor": 0})
    assert "".join(c["text"] for c in tail["chunks"]) == "line 1\nline 2\nline 3\n"
    # Another session still cannot see them.
    with pytest.raises(RpcFailure):
        rpc(home, "task.status", {"session_id": "zzz", "cwd": cwd, "task_id": done["task_id"]})
    fresh = rpc(home, "task.exec", {"session_id": "a", "cwd": str(tmp_path), "lang": "bash",
                                    "code": "echo alive; sleep 30"})
    assert fresh["task"]["task_id"] > max(task_id for _, task_id in started)  # ids continue
    time.sleep(1.5)  # a sweep passes
    status = rpc(home, "task.status", {"session_id": "a", "cwd": str(tmp_path),
                                       "task_id": fresh["task"]["task_id"]})
    assert status["state"] == "running"
    reaped = [json.loads(line) for line in (home.path / "runner.log").read_text().splitlines()
              if '"orphans_reaped"' in line]
    # One line per tree: every old task that still had processes is named, once.
    named = [r["task_id"] for r in reaped]
    assert len(named) == len(set(named)) and {tid for _, tid in started} <= set(named)
    assert all(r["pids"] for r in reaped)


def test_other_homes_tasks_are_never_touched(tmp_path):
    one = Home(tmp_path / "one", free_port())
    two = Home(tmp_path / "two", free_port())
    try:
        assert one.cli("runner", "start").returncode == 0
        assert two.cli("runner", "start").returncode == 0
        start_tasks(one, str(tmp_path), sessions=("x",))
        start_tasks(two, str(tmp_path), sessions=("y",))
        theirs = tagged(two)
        os.kill(runner_pid(one), signal.SIGKILL)
        wait_until(lambda: not one.runner_pids(), 5)
        assert one.cli("runner", "start").returncode == 0
        assert wait_until(lambda: not tagged(one) or tagged(one) == set(), 5)
        assert theirs <= tagged(two)
        assert rpc(two, "runner.info")["running_tasks"] == 10
    finally:
        one.stop_all()
        two.stop_all()


def test_idle_session_expires_but_busy_one_stays(home, tmp_path):
    env = {"PLUGKIT_SESSION_IDLE_S": "1", "PLUGKIT_SWEEP_INTERVAL_S": "0.2"}
    assert home.cli("runner", "start", env=env).returncode == 0
    rpc(home, "task.exec", {"session_id": "idle", "cwd": str(tmp_path), "lang": "bash", "code": "true",
                            "wait_ms": 5000})
    rpc(home, "task.exec", {"session_id": "busy", "cwd": str(tmp_path), "lang": "bash", "code": "sleep 30"})
    assert wait_until(lambda: rpc(home, "runner.info")["sessions"] == 1, 10)
    assert len(rpc(home, "task.list", {"session_id": "busy", "cwd": str(tmp_path)})["tasks"]) == 1
    assert rpc(home, "task.list", {"session_id": "idle", "cwd": str(tmp_path)})["tasks"] == []


def test_task_ids_continue_across_clean_restarts(home, tmp_path):
    assert home.cli("runner", "start").returncode == 0
    first = rpc(home, "task.exec", {"session_id": "s", "cwd": str(tmp_path), "lang": "bash", "code": "true",
                                    "wait_ms": 5000})["task"]["task_id"]
    assert home.cli("runner", "restart").returncode == 0
    second = rpc(home, "task.exec", {"session_id": "s", "cwd": str(tmp_path), "lang": "bash", "code": "true",
                                     "wait_ms": 5000})["task"]["task_id"]
    assert second > first
    assert rpc(home, "task.status", {"session_id": "s", "cwd": str(tmp_path), "task_id": first})["state"] == "completed"


@pytest.mark.parametrize("how", ["restart", "kill -9"])
def test_output_already_read_is_not_new_after_the_runner_restarts(home, tmp_path, how):
    """The session's read position is in the ledger: after a restart (clean or -9) exec:status
    shows a task's output it never read, and not what the agent was already shown."""
    session = ["--session", "s"]
    shown = home.cli("exec:bash", *session, "echo shown-line", cwd=tmp_path)
    assert "shown-line" in shown.stdout, shown
    unread = home.cli("exec:bash", *session, "--wait", "0", "sleep 0.2; echo unread-line", cwd=tmp_path)
    assert unread.returncode == 0 and "unread-line" not in unread.stdout, unread
    read_id, unread_id = (re.search(r"task_(\d+)", done.stdout + done.stderr).group(0) for done in (shown, unread))
    assert wait_until(lambda: rpc(home, "task.status", {"session_id": "s", "cwd": str(tmp_path),
                                                        "task_id": int(unread_id[5:])})["state"] == "completed", 10)
    if how == "restart":
        assert home.cli("runner", "restart", "--force").returncode == 0
    else:
        # What kill -9 may lose is what the ledger had not written yet: wait until it holds the
        # ended task and the read position (its writes are batched, a few ms behind the answer).
        assert wait_until(lambda: _ledger(home, "SELECT state FROM tasks WHERE task_id = ?", unread_id[5:])
                          == "completed" and _ledger(home, "SELECT read_out FROM reads WHERE task_id = ?",
                                                     read_id[5:]), 10)
        os.kill(runner_pid(home), signal.SIGKILL)
        assert home.cli("runner", "start").returncode == 0
    again = home.cli("exec:status", *session, read_id, cwd=tmp_path)
    assert again.returncode == 0 and "shown-line" not in again.stdout, again
    first = home.cli("exec:status", *session, unread_id, cwd=tmp_path)
    assert "unread-line" in first.stdout, first
    assert "unread-line" not in home.cli("exec:status", *session, unread_id, cwd=tmp_path).stdout


def _ledger(home: Home, sql: str, task_id: str):
    import sqlite3

    with contextlib.closing(sqlite3.connect(f"file:{home.path / 'ledger.sqlite3'}?mode=ro", uri=True)) as db:
        row = db.execute(sql, (int(task_id),)).fetchone()
    return row[0] if row else None


def test_corrupt_ledger_is_moved_aside_and_the_runner_starts(home, tmp_path):
    home.path.mkdir(mode=0o700)
    (home.path / "ledger.sqlite3").write_bytes(b"this is not a database" * 100)
    result = home.cli("runner", "start")
    assert result.returncode == 0, result.stderr
    assert [p.name for p in home.path.iterdir() if ".corrupt-" in p.name]
    assert "ledger_corrupt_moved_aside" in (home.path / "runner.log").read_text()
    res = rpc(home, "task.exec", {"session_id": "s", "cwd": str(tmp_path), "lang": "bash", "code": "echo ok",
                                  "wait_ms": 5000})
    assert res["task"]["state"] == "completed"
