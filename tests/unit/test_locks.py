"""plugkit/locks.py across real processes: the runner's instance lock and the client's
raw flock(2) exclude each other both ways, the kernel names the holder, and the client's side
imports no filelock."""

import os
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


def test_every_file_lock_is_taken_in_plugkit_locks():
    # One place names every lock and its mechanism (issue 43 #4): no flock(2) elsewhere.
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    found = [str(p.relative_to(root)) for pkg in ("plugkit", "runner", "client") for p in (root / pkg).rglob("*.py")
             if "fcntl.flock(" in p.read_text(errors="replace") and p != root / "plugkit" / "locks.py"]
    assert found == [], found


def test_filelocks_and_the_raw_locks_exclude_each_other(tmp_path):
    import filelock  # here only: the module's first test proves plugkit.locks imports none

    path = str(tmp_path / "x.lock")
    with locks.file_lock(path):
        assert locks.try_exclusive(path) is None
    fd = locks.try_exclusive(path)
    assert fd is not None
    try:
        with pytest.raises(filelock.Timeout):  # the raw lock holds
            locks.file_lock(path).acquire(timeout=0.1)
    finally:
        locks.release(fd)
    with locks.exclusive(path), pytest.raises(filelock.Timeout):
        locks.file_lock(path).acquire(timeout=0.1)
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"


def test_no_lock_is_taken_through_a_planted_link(tmp_path):
    target = tmp_path / "elsewhere"
    os.symlink(target, tmp_path / "state.lock")
    with pytest.raises(OSError):
        with locks.exclusive(str(tmp_path / "state.lock")):
            pass
    with pytest.raises(OSError):
        locks.try_exclusive(str(tmp_path / "state.lock"))
    assert not target.exists()
