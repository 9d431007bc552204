"""The worker's group on a node lives only as long as the process running its attempt
(runner/node/keeper.py): that process killed -9, nothing of the worker stays, what it started in
the background included. Real processes, no Ray."""

import os
import signal
import subprocess
import sys

from runner.node import keeper
from tests.support.procs import alive, wait_gone

# A stand-in for the Ray worker process: it starts the worker under its keeper, says the pids,
# and waits to be killed. The worker leaves a child of its own in the background.
OWNER = r"""
import sys
from runner.node import keeper
child = keeper.spawn(["sh", "-c", "sleep 300 & echo $!; exec sleep 300"], "/", {"PATH": "/usr/bin:/bin"})
child.stdin.close()
print(child.pid, child.stdout.readline().decode().strip(), flush=True)
sys.stdin.read()
"""


def test_the_owner_killed_takes_the_worker_and_what_it_started():
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    pids = []
    try:
        pids = [int(p) for p in owner.stdout.readline().split()]
        assert len(pids) == 2 and all(alive(p) for p in pids), pids
        assert os.getpgid(pids[1]) == pids[0]  # the worker's background child: in the keeper's group
        owner.kill()
        owner.wait()
        assert all(wait_gone(p) for p in pids), [p for p in pids if alive(p)]
    finally:
        if pids:
            try:
                os.killpg(pids[0], signal.SIGKILL)  # the keeper's group: the worker and its child
            except ProcessLookupError:
                pass
        owner.kill()
        owner.communicate()


def test_the_keeper_ends_as_its_worker_did_and_hands_on_its_output():
    done = keeper.spawn(["sh", "-c", "read line; echo got $line; exit 3"], "/", {"PATH": "/usr/bin:/bin"})
    out, _ = done.communicate(b"it\n", timeout=60)
    assert (done.returncode, out) == (3, b"got it\n")
    killed = keeper.spawn(["sh", "-c", "kill -9 $$"], "/", {"PATH": "/usr/bin:/bin"})
    killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    missing = keeper.spawn(["no-such-program-here"], "/", {"PATH": "/usr/bin:/bin"})
    out, _ = missing.communicate(timeout=60)
    assert missing.returncode == 127 and b"no-such-program-here" in out

