"""A restart loses nothing, visibly (issue 30, item 4): after `runner stop`, kill -9 or
kill-port on the runner, exec:tasks still lists the session's tasks from the ledger (those
that were running as killed), ids continue from the last one after a clean stop, and the stop
names the running tasks it killed."""

import os
import re
import signal

import pytest

from tests.support.runner_home import Home

pytestmark = pytest.mark.e2e
SESSION = {"PLUGKIT_SESSION": "restarts"}


def _run(home: Home, tmp_path, *args: str):
    return home.cli(*args, cwd=str(tmp_path), env=SESSION, timeout=30)


def _ids(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"^task_(\d+)", text, re.M)]


def _stop_runner(home: Home, tmp_path, how: str) -> str:
    if how == "stop":
        return _run(home, tmp_path, "runner", "stop").stdout
    if how == "kill-port":
        return _run(home, tmp_path, "kill-port", str(home.discovery()["port"])).stdout
    [pid] = home.runner_pids()
    os.kill(pid, signal.SIGKILL)
    home.stop_all()  # the task trees a SIGKILLed runner could not end
    return ""


@pytest.mark.parametrize("how", ["stop", "kill-port", "kill -9"])
def test_tasks_outlive_a_restart_in_the_listing(home: Home, tmp_path, how):
    done = _run(home, tmp_path, "exec:bash", "echo one")
    long = _run(home, tmp_path, "exec:bash", "--wait", "0", "sleep 60")
    first, running = _ids(_run(home, tmp_path, "exec:tasks").stdout)
    said = _stop_runner(home, tmp_path, how)
    if how != "kill -9":
        assert f"killed with it: task_{running} (session restarts, bash)" in said, said
    listed = _run(home, tmp_path, "exec:tasks")
    rows = {int(r.split()[0][5:]): r for r in listed.stdout.splitlines() if r.startswith("task_")}
    assert set(rows) == {first, running}, listed.stdout
    assert "completed" in rows[first] and "killed" in rows[running]
    assert done.returncode == 0 and long.returncode == 0
    after = _run(home, tmp_path, "exec:bash", "echo two")
    new_id = int(re.search(r"task_(\d+)", _run(home, tmp_path, "exec:tasks").stdout.splitlines()[-1]).group(1))
    assert after.returncode == 0
    if how != "kill -9":  # a clean stop gives its unused ids back
        assert new_id == running + 1, listed.stdout
    _run(home, tmp_path, "runner", "stop")


def test_a_task_run_from_a_subdirectory_is_listed_from_the_root_after_a_restart(home: Home, tmp_path):
    # A session is (id, workspace root) and a record keeps the cwd its task ran in: the
    # listing from the ledger must find it by the root, as exec:status does.
    (tmp_path / ".git").mkdir()
    sub = tmp_path / "pkg" / "deep"
    sub.mkdir(parents=True)
    ran = home.cli("exec:bash", "echo from-deep", cwd=str(sub), env=SESSION, timeout=30)
    assert ran.returncode == 0, ran.stderr
    [task] = _ids(_run(home, tmp_path, "exec:tasks").stdout)
    _run(home, tmp_path, "runner", "stop")
    listed = _run(home, tmp_path, "exec:tasks").stdout
    assert _ids(listed) == [task], listed
    _run(home, tmp_path, "runner", "stop")
