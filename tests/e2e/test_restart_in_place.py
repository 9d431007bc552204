"""`plugkit runner restart` keeps running tasks running (issue 47, item 4): the runner re-executes
itself in place, a `python -m http.server` task keeps answering, a counter printing every 50 ms
loses and repeats no line, read cursors survive (exec:status repeats nothing), a task that ends
while no image watches reports its real exit code, `runner stop` still ends everything, and a
restart after an upgrade runs the new code."""

import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.procs import wait_gone
from tests.support.runner_home import Home, cli_argv, free_port, rpc

pytestmark = pytest.mark.e2e
SESSION = "keep"


def _cli(home: Home, cwd, *args: str, env: dict | None = None):
    return home.cli(*args, cwd=str(cwd), env={"PLUGKIT_SESSION": SESSION, **(env or {})}, timeout=90)


def _task_id(said) -> int:
    return int(re.search(r"task_(\d+)", said.stdout + said.stderr).group(1))


def _said(result) -> str:
    return result.stdout + result.stderr  # the task's stderr comes out on the CLI's


def _whole(home: Home, cwd, task_id: int) -> str:
    out = rpc(home, "task.output", {"session_id": SESSION, "cwd": str(cwd), "task_id": task_id, "cursor": 0,
                                    "max_bytes": 1 << 20})
    return "".join(c["text"] for c in out["chunks"])


def _status(home: Home, cwd, task_id: int) -> dict:
    return rpc(home, "task.status", {"session_id": SESSION, "cwd": str(cwd), "task_id": task_id})


def _wait(predicate, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _get(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as resp:
            return resp.status == 200
    except OSError:
        return False


def test_a_restart_in_place_keeps_tasks_running_and_their_output_whole(home: Home, tmp_path):
    (tmp_path / "index.html").write_text("hello\n")
    web = free_port()
    server = _cli(home, tmp_path, "exec:bash", "--wait", "0",
                  f"exec {sys.executable} -u -m http.server {web} --bind 127.0.0.1")
    server_id = _task_id(server)
    # Counts every 50 ms until told to stop after the restart: lines printed before, while no
    # image reads its pipe, and after.
    stop_file = tmp_path / "stop-counting"
    counter = _cli(home, tmp_path, "exec:bash", "--wait", "0",
                   f"i=0; until [ -e '{stop_file}' ]; do i=$((i+1)); echo count $i; sleep 0.05; done")
    counter_id = _task_id(counter)
    # Ends while no image reads it: the handover file exists from just before the exec until
    # the new image's boot reads it.
    marker = home.path / "handover.json"
    ender = _cli(home, tmp_path, "exec:bash", "--wait", "0", f"until [ -e '{marker}' ]; do sleep 0.005; done; exit 7")
    ender_id = _task_id(ender)
    assert _wait(lambda: _get(web)), "the http.server task never answered"
    before_pid = home.discovery()["pid"]
    assert _wait(lambda: "count 5\n" in _whole(home, tmp_path, counter_id))
    seen_server = _said(_cli(home, tmp_path, "exec:status", f"task_{server_id}"))
    seen_counter = _cli(home, tmp_path, "exec:status", f"task_{counter_id}").stdout
    assert '"GET / HTTP/1.1" 200' in seen_server, seen_server

    # Requests all through the restart, from outside: each must be answered.
    answers: list[bool] = []
    stop = threading.Event()

    def hammer():
        while not stop.is_set():
            answers.append(_get(web))
            time.sleep(0.02)

    thread = threading.Thread(target=hammer)
    thread.start()
    # A client waiting on a task (a long poll) when the restart comes: answered, not cut off.
    waiting = subprocess.Popen(cli_argv() + ["exec:sleep", f"task_{server_id}", "5"], cwd=str(tmp_path),
                               env={**home.env, "PLUGKIT_SESSION": SESSION}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)  # its task.wait is in flight
        restarted = _cli(home, tmp_path, "runner", "restart")
        out, err = waiting.communicate(timeout=60)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.communicate()
        time.sleep(0.2)
        stop.set()
        thread.join()
    assert waiting.returncode == 0 and "lost the runner" not in err, (out, err)
    assert restarted.returncode == 0, restarted.stderr
    assert f"restarted in place (pid {before_pid})" in restarted.stdout, restarted.stdout
    assert f"task_{server_id}" in restarted.stdout and f"task_{counter_id}" in restarted.stdout
    assert home.runner_pids() == [before_pid]
    assert answers and all(answers), f"{answers.count(False)} of {len(answers)} requests failed across the restart"
    assert _get(web)

    # The counter: every line once, in order, whatever was printed while no image read it.
    printed = _whole(home, tmp_path, counter_id).count("\n")
    assert _wait(lambda: _whole(home, tmp_path, counter_id).count("\n") > printed + 3)  # counting on
    stop_file.write_text("")
    assert _wait(lambda: _status(home, tmp_path, counter_id)["state"] == "completed")
    total = _whole(home, tmp_path, counter_id).count("\n")
    assert _whole(home, tmp_path, counter_id) == "".join(f"count {i}\n" for i in range(1, total + 1))
    # Read cursors survived: what exec:status showed before is not shown again.
    rest = _cli(home, tmp_path, "exec:status", f"task_{counter_id}").stdout
    shown = re.findall(r"^count (\d+)$", counter.stdout + seen_counter + rest, re.M)
    assert shown == [str(i) for i in range(1, total + 1)], (counter.stdout, seen_counter, rest)

    ended = _status(home, tmp_path, ender_id)
    assert (ended["state"], ended["exit_code"]) == ("failed", 7), ended

    again = _said(_cli(home, tmp_path, "exec:status", f"task_{server_id}"))
    served = re.findall(r'"GET / HTTP/1.1" 200', _whole(home, tmp_path, server_id))
    assert "Serving HTTP" in seen_server and "Serving HTTP" not in again, again
    # Every request answered is logged once: none lost, none twice (plus the two probes).
    assert len(served) == len(answers) + 2, (len(served), len(answers))
    assert _status(home, tmp_path, server_id)["state"] == "running"

    # `runner stop` still ends everything, the adopted tasks too.
    pid = _status(home, tmp_path, server_id)["pid"]
    stopped = _cli(home, tmp_path, "runner", "stop")
    assert stopped.returncode == 0 and f"task_{server_id}" in stopped.stdout, stopped.stdout
    # wait_gone: pid_exists, then Process(pid) could race the reaping of the task between them (NoSuchProcess).
    assert wait_gone(pid, 60)
    assert not _get(web)
    listed = _cli(home, tmp_path, "exec:tasks").stdout
    assert re.search(rf"^task_{server_id}\s.*killed", listed, re.M), listed


def _installed_copy(dest: Path) -> Path:
    """The plugkit, runner and client packages this test imports, copied: an install we can upgrade."""
    import client
    import plugkit
    import runner

    for pkg in (plugkit, runner, client):
        src = Path(pkg.__file__).parent
        shutil.copytree(src, dest / src.name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_a_restart_after_an_upgrade_runs_the_new_code(home: Home, tmp_path):
    site = _installed_copy(tmp_path / "site")
    env = {"PYTHONPATH": str(site)}
    # A handover file left from long ago is not taken by a fresh start: it goes, and the log says so.
    home.path.mkdir(parents=True, exist_ok=True)
    stale = home.path / "handover.json"
    stale.write_text("{}")
    os.chmod(stale, 0o600)
    assert _cli(home, tmp_path, "runner", "start", env=env).returncode == 0
    assert not stale.exists()
    assert "handover_file_ignored" in (home.path / "runner.log").read_text()
    before = rpc(home, "runner.info")
    task = _task_id(_cli(home, tmp_path, "exec:bash", "--wait", "0", "echo up; sleep 60", env=env))
    init = site / "plugkit" / "__init__.py"
    text = init.read_text()
    version = re.search(r'__version__ = "([^"]+)"', text).group(1)
    init.write_text(text.replace(f'__version__ = "{version}"', f'__version__ = "{version}+upgraded"'))
    # What no exec keeps (a serial port) is ended first and said in the restart's one line.
    port = rpc(home, "task.exec", {"session_id": SESSION, "cwd": str(tmp_path), "lang": "serial",
                                   "code": '{"port": "loop://"}', "wait_ms": 0})["task"]["task_id"]
    restarted = _cli(home, tmp_path, "runner", "restart", env=env)
    assert restarted.returncode == 0, restarted.stderr
    assert f"kept running: task_{task}; ended (cannot cross a restart): task_{port} (serial)" in restarted.stdout
    assert (_status(home, tmp_path, port)["reason"]) == "runner_restart"
    after = rpc(home, "runner.info")
    assert after["version"] == f"{version}+upgraded", after
    assert after["pid"] == before["pid"] and after["started_at"] > before["started_at"]
    assert _status(home, tmp_path, task)["state"] == "running"
    assert _cli(home, tmp_path, "runner", "stop", env=env).returncode == 0
    assert _status_after_stop(home, tmp_path, task, env) == "killed"


def _status_after_stop(home: Home, cwd, task_id: int, env: dict) -> str:
    said = _cli(home, cwd, "exec:tasks", env=env).stdout
    row = next((r for r in said.splitlines() if r.startswith(f"task_{task_id} ")), "")
    _cli(home, cwd, "runner", "stop", env=env)
    return row.split()[2] if row else said
