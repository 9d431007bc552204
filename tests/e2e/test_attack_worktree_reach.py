"""What a worker leaves in its worktree is reachable by no other local user: the worktrees'
directory is the person's alone (0700). A worker whose files are another owner's or setuid (a
container of its own, running as root, writing the bound worktree: work_docker; here the suite
itself runs as root, so the worker's own chmod u+s does it) would otherwise hand any local user
that program. Real `plugkit work`, real bwrap, the other user a real uid (nobody)."""

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.agent import make_repo
from tests.support.work_cli import AGENT, Work

pytestmark = pytest.mark.e2e

SUID = "cp /usr/bin/id suid-id && chmod 4755 suid-id && touch planted"
NOBODY = 65534


@pytest.fixture
def shared_base():
    """A directory other users may pass through, as a home or a checkout usually is (pytest's
    own tmp dir is 0700, which would hide the attack)."""
    base = Path(tempfile.mkdtemp(prefix="plugkit-reach-", dir="/tmp"))
    os.chmod(base, 0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_another_local_user_reaches_nothing_a_live_worker_left(home, shared_base):
    repo = make_repo(shared_base / "repo", 'gates = "advisory"\n')
    os.chmod(repo, 0o755)
    w = Work(home, repo, {"w1": [["shell", SUID], ["hang"]]})
    w.add("w1", "--verify", "true")
    w.cli("work", "--run", f"{sys.executable} {AGENT}", "--json")
    try:
        worktree = repo / ".plugkit" / "worktrees" / "w1"
        w.until(lambda r: (worktree / "planted").exists())
        assert os.stat(worktree / "suid-id").st_mode & stat.S_ISUID
        try:
            other = subprocess.run([str(worktree / "suid-id"), "-u"], user=NOBODY, group=NOBODY, extra_groups=[],
                                   capture_output=True, text=True, timeout=30)
        except PermissionError:
            other = None
        assert other is None, other  # it ran: as uid 0 (`id -u` said so)
        assert stat.S_IMODE(os.stat(repo / ".plugkit" / "worktrees").st_mode) == 0o700
    finally:
        w.cli("work", "stop")
