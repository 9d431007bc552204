"""One real runner for a whole test module, each test in a session of its own.

A runner start and stop is ~0.5-1.5 s of CPU (more on a loaded machine), paid once per test by
the `home` fixture; the suite is CPU-bound on two cores. A test that only runs tasks through the
CLI does not need a runner of its own: it needs its own session (PLUGKIT_SESSION, set per test)
and its own workspace (its tmp_path). A test that starts, stops, kills, wedges or counts runners,
relies on the default per-directory session, or needs a runner booted with its own environment
(plugkit/config.py's limits, PLUGKIT_CGROUPS: read once at boot), keeps `home`.

The runner is started while no test's leak mark is set, so it is not taken for a test's leftover;
every task a test starts carries that test's mark (the CLI sends its caller's environment with
task.exec), so the leak check still sees a task a test left running. After each test the runner
must still be the one that served it: a test that ended it fails, not the tests after it.
"""

import os
import re

import pytest

from tests.support.runner_home import Home, free_port


def start_module_runner(base) -> Home:
    home = Home(path=base / "home", port=free_port())
    started = home.cli("runner", "start")
    assert started.returncode == 0, started.stdout + started.stderr
    return home


def session_for(nodeid: str) -> str:
    """A session id of the test's own, readable in a runner's log."""
    return "t-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", nodeid.rsplit("/", 1)[-1])[-80:] + f"-{os.getpid()}"


def enter(home: Home, monkeypatch, nodeid: str) -> int:
    """Point this test's environment at the module's runner in a fresh session; the runner's pid."""
    info = home.discovery()
    assert info and pid_alive(info["pid"]), "the module's runner is gone: an earlier test of this module ended it"
    monkeypatch.setenv("PLUGKIT_HOME", str(home.path))
    monkeypatch.setenv("PLUGKIT_PORT", str(home.port))
    monkeypatch.setenv("PLUGKIT_SESSION", session_for(nodeid))
    return info["pid"]


def check_still_serving(home: Home, pid: int) -> None:
    info = home.discovery()
    if not (info and info["pid"] == pid and pid_alive(pid)):
        pytest.fail("this test ended or replaced the module's shared runner: give it `home`, a runner of its own")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
