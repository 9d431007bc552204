"""A runner that cannot be talked to is still found, described and recovered (issue 17.5, 17.6):
damaged port and token files, and a SIGSTOPped runner."""

import os
import signal

import pytest

from tests.support.runner_home import Home

pytestmark = pytest.mark.e2e


def started(home: Home) -> int:
    result = home.cli("runner", "start")
    assert result.returncode == 0, result.stderr
    [pid] = home.runner_pids()
    return pid


def answers(home: Home, tmp_path) -> bool:
    result = home.cli("exec:bash", "echo alive", cwd=str(tmp_path), timeout=30)
    return result.returncode == 0 and "alive" in result.stdout


DAMAGE = {
    "garbage token": ("token", "not-the-token\n"),
    "garbage port": ("port", "{not json"),
    "port naming a stranger": ("port", '{"port": 1, "pid": 1}'),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_stop_and_restart_work_through_damaged_discovery_files(home: Home, tmp_path, damage):
    pid = started(home)
    name, text = DAMAGE[damage]
    try:
        (home.path / name).write_text(text)
        status = home.cli("runner", "status", timeout=10)
        assert status.returncode == 1
        assert f"pid {pid} holds the lock" in status.stdout and "plugkit runner restart" in status.stdout
        call = home.cli("exec:bash", "true", cwd=str(tmp_path), timeout=10)
        assert call.returncode != 0 and "plugkit runner restart" in call.stderr
        stop = home.cli("runner", "stop", timeout=20)
        assert stop.returncode == 0 and f"pid {pid}" in stop.stdout, stop.stderr
        assert home.runner_pids() == []
        (home.path / name).write_text(text)  # damaged again, with nobody running
        restart = home.cli("runner", "restart", timeout=30)
        assert restart.returncode == 0, restart.stderr
        assert answers(home, tmp_path)
    finally:
        home.cli("runner", "stop")
        home.stop_all()


def test_a_stopped_runner_is_described_fails_fast_and_restart_recovers_it(home: Home, tmp_path):
    pid = started(home)
    os.kill(pid, signal.SIGSTOP)
    try:
        status = home.cli("runner", "status", timeout=10)
        assert status.returncode == 1
        assert f"pid {pid} holds the lock, stopped" in status.stdout
        call = home.cli("exec:bash", "true", cwd=str(tmp_path), timeout=10)
        assert call.returncode == 69
        assert f"pid {pid}" in call.stderr and "stopped" in call.stderr and "plugkit runner restart" in call.stderr
        restart = home.cli("runner", "restart", timeout=30)
        assert restart.returncode == 0, restart.stderr
        assert pid not in home.runner_pids()
        assert answers(home, tmp_path)
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        home.cli("runner", "stop")
        home.stop_all()
