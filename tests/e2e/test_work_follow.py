"""A person watching `plugkit work --wait`: a line per event as the run goes (started, worker
exited, check green/red, landed, held and the command that retries it), Ctrl-C that stops only
the following, and `work status --wait` ending with the same exit codes as `work --wait`."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.work_cli import Work, commit_file
from tests.support.agent import make_repo
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e

AGENT_RUN = ("--run", f"{sys.executable} {Path(__file__).resolve().parents[1] / 'support' / 'work_agent.py'}")


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo", 'gates = "advisory"\n')


def _event(lines: list[str], item: str, words: str) -> int:
    """The index of the first event line of `item` holding `words` (a failed lookup names them)."""
    for i, line in enumerate(lines):
        if line.startswith("+") and f" {item} " in line and words in line:
            return i
    raise AssertionError(f"no {item!r} event with {words!r} in:\n" + "\n".join(lines))


def test_wait_streams_one_line_per_event_in_order(home, repo):
    w = Work(home, repo, {"w1": commit_file("w1.txt"), "w2": commit_file("w2.txt")})
    w.add("w1", "--verify", "test -f w1.txt")
    w.add("w2", "--verify", "test -f nothing-makes-this")
    done = w.cli("work", *AGENT_RUN, "--wait", "120", ok=False)
    lines = done.stdout.splitlines()
    order = [_event(lines, "w1", "worker started"), _event(lines, "w1", "worker exited"),
             _event(lines, "w1", "check green"), _event(lines, "w1", "landed as")]
    assert order == sorted(order), done.stdout
    red = _event(lines, "w2", "check red")
    held = next(line for line in lines[red:] if " w2 " in line and "next: plugkit prd update w2" in line)
    assert "plugkit work --items w2" in held and "branch plugkit/w2" in held, held
    assert done.returncode == 3  # an item ended unfinished: the same code `work status --wait` gives
    again = w.cli("work", "status", "--wait", "5", ok=False)
    assert again.returncode == 3, (again.stdout, again.stderr)
    assert "next: plugkit prd update w2 --status pending && plugkit work --items w2" in again.stdout


def test_ctrl_c_on_wait_says_the_run_goes_on_and_how_to_stop_it(home, repo):
    w = Work(home, repo, {"w1": [["sleep", 30], *commit_file("w1.txt")]})
    w.add("w1", "--verify", "test -f w1.txt")
    proc = subprocess.Popen(cli_argv() + ["work", *AGENT_RUN, "--wait", "120"], cwd=repo,
                            env={**home.env, **w.env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        started = ""
        deadline = time.monotonic() + 60
        while "worker started" not in started and time.monotonic() < deadline:
            started += proc.stdout.readline()
        assert "worker started" in started, started
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and "goes on in the runner" in err and "plugkit work stop" in err, err
    run = w.status()
    assert run["state"] == "running" and run["ended_at"] is None, json.dumps(run, indent=1)
    w.cli("work", "stop")
