"""Tasks under the real daemon: shutdown and session end leave no process behind."""

import os
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest

from runner.system import tags
from tests.support.load import stretched
from tests.support.runner_home import rpc

pytestmark = pytest.mark.e2e
FIX = Path(__file__).resolve().parent.parent / "fixtures"


def tagged_with_home(home) -> list[int]:
    found = []
    for p in psutil.process_iter():
        try:
            env = p.environ()
        except psutil.Error:
            continue
        if env.get(tags.HOME) == tags.home_id(str(home.path)) and env.get("PLUGKIT_TASK_ID"):
            found.append(p.pid)
    return found


def start_tasks(home, cwd: str) -> list[int]:
    ids = []
    for code in (f"exec {sys.executable} {FIX / 'ignores_term.py'}",
                 f"exec {sys.executable} {FIX / 'setsid_escape.py'}",
                 f"exec {sys.executable} {FIX / 'forks_children.py'} 4",
                 "sleep 300"):
        res = rpc(home, "task.exec", {"session_id": "e2e", "cwd": cwd, "lang": "bash", "code": code})
        ids.append(res["task"]["task_id"])
    for task_id in ids[:3]:
        rpc(home, "task.wait", {"session_id": "e2e", "cwd": cwd, "task_id": task_id,
                                "until_regex": r"ready|child \d+", "timeout_ms": 10_000})
    return ids


def test_sigterm_with_running_tasks_exits_zero_fast_and_kills_every_tree(home, tmp_path):
    proc = home.start_runner()
    start_tasks(home, str(tmp_path))
    assert len(tagged_with_home(home)) >= 7
    began = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert time.monotonic() - began < stretched(2.0)  # 2 s on a quiet machine, more beside CPU hogs
    assert tagged_with_home(home) == []


def test_session_end_through_the_daemon(home, tmp_path):
    assert home.cli("runner", "start").returncode == 0
    ids = start_tasks(home, str(tmp_path))
    ended = rpc(home, "session.end", {"session_id": "e2e", "cwd": str(tmp_path)})
    assert sorted(ended["killed"]) == sorted(ids)
    assert tagged_with_home(home) == []
    info = rpc(home, "runner.info")
    assert info["running_tasks"] == 0 and info["sessions"] == 0


def test_task_ids_are_unique_across_sessions(home, tmp_path):
    assert home.cli("runner", "start").returncode == 0
    seen = set()
    for session in ("a", "b", "a"):
        res = rpc(home, "task.exec", {"session_id": session, "cwd": str(tmp_path), "lang": "bash",
                                      "code": "true", "wait_ms": 5000})
        seen.add(res["task"]["task_id"])
    assert len(seen) == 3
    # Code files live outside the home (a task's argv must not name the token's directory).
    tmp_root = rpc(home, "debug.snapshot")["snapshot"]["executors"]["process"]["tmp_root"]
    assert not tmp_root.startswith(str(home.path)) and os.listdir(tmp_root) == []
