"""plugkit/locks.py across real processes: the runner's instance lock and the client's
raw flock(2) exclude each other both ways, the kernel names the holder, and the client's side
imports no filelock."""

import subprocess
import sys
import time

import pytest

from plugkit import locks

HOLD = ("import sys, time; from plugkit import locks; "
        "lock = locks.hold_instance(sys.argv[1]) if sys.argv[2] == 'instance' else "
        "locks.take(sys.argv[1], time.monotonic()); print('held', flush=True); sys.stdin.read()")


@pytest.fixture
def holder_process(tmp_path):
    procs = []

    def start(kind: str):
        path = str(tmp_path / f"{kind}.lock")
        proc = subprocess.Popen([sys.executable, "-c", HOLD, path, kind], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        assert proc.stdout.readline() == "held\n"
        return proc, path

    yield start
    for proc in procs:
        proc.stdin.close()
        proc.wait(10)
        proc.stdout.close()


def test_an_instance_lock_is_seen_and_excludes_the_raw_flock(holder_process):
    proc, path = holder_process("instance")
    assert locks.holder(path) == proc.pid and locks.is_held(path)
    with pytest.raises(locks.Busy):
        locks.take(path, time.monotonic() + 0.05)
    proc.stdin.close()
    proc.wait(10)
    assert locks.holder(path) is None and not locks.is_held(path)
    locks.release(locks.take(path, time.monotonic()))


def test_a_raw_flock_excludes_the_instance_lock(holder_process):
    proc, path = holder_process("start")
    assert locks.holder(path) == proc.pid
    with pytest.raises(locks.Busy):
        locks.hold_instance(path)


def test_the_clients_lock_paths_import_no_filelock():
    out = subprocess.run([sys.executable, "-c", "import sys, client.wire.autostart, client.wire.instance; "
                          "print('filelock' in sys.modules)"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
