"""Task code files live in a private dir outside the runner's home (a task's argv names its
file, and the home holds the token); dirs of dead runners are swept, live ones never."""

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from runner.executors.task_files import TMP_PREFIX, task_dir, write_code


def test_a_dead_runners_task_dir_is_swept_and_a_live_processs_is_kept():
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{int(gone.stdout)}-")
    with open(os.path.join(dead, "task_7.sh"), "w") as fh:
        fh.write("echo left behind by a runner killed with -9\n")
    live = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getppid()}-")  # another runner, still running
    mine = task_dir()
    try:
        assert not os.path.exists(dead) and os.path.isdir(live)
        assert os.path.basename(mine).startswith(f"{TMP_PREFIX}{os.getpid()}-")
        assert stat.S_IMODE(os.stat(mine).st_mode) == 0o700
    finally:
        for path in (dead, live, mine):
            shutil.rmtree(path, ignore_errors=True)


def test_a_code_file_is_named_by_its_task_and_never_overwrites_one_left_behind(tmp_path):
    first = write_code(str(tmp_path), "task_7", ".sh", "echo é\n".encode())
    assert first == str(tmp_path / "task_7.sh")
    assert oct(os.stat(first).st_mode & 0o777) == oct(0o600)
    # A file a crash left with that name: the new one gets a name of its own, the old stays.
    second = write_code(str(tmp_path), "task_7", ".sh", b"true\n")
    assert second != first and os.path.basename(second).startswith("task_7-") and second.endswith(".sh")
    assert Path(first).read_bytes() == "echo é\n".encode() and Path(second).read_bytes() == b"true\n"
