"""The gates read a test runner's configuration from the working tree (is the check weakened since
the item's base? runner/core/gates/weaken.py) with a plain open() on the runner's event loop: a
FIFO left in place of pyproject.toml (an `exec --sandbox` task or an agent can write the working
tree) held it for ever, and the whole runner with it: every session's calls, `runner status`.
Real CLI, daemon and git."""

import os

import pytest

from tests.support.search_repo import commit, git

pytestmark = pytest.mark.e2e


def test_a_fifo_for_pyproject_holds_the_check_and_never_the_runner(home, tmp_path):
    repo = tmp_path / "proj"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, {"pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"-q\"\n",
                  ".plugkit/config.toml": "gates = \"advisory\"\n"}, "init")
    added = home.cli("prd", "add", "thing", "--id", "t1", "--verify", "python -m pytest -q", cwd=repo)
    assert added.returncode == 0, added.stderr
    started = home.cli("prd", "update", "t1", "--status", "in_progress", cwd=repo)  # its base is recorded
    assert started.returncode == 0, started.stderr
    os.unlink(repo / "pyproject.toml")
    os.mkfifo(repo / "pyproject.toml")
    verify = home.cli("prd", "verify", "t1", cwd=repo, timeout=120)
    assert verify.returncode != 0 and "touches_check" in verify.stderr and "pyproject.toml" in verify.stderr, (
        verify.returncode, verify.stderr)
    status = home.cli("runner", "status", timeout=60)
    assert status.returncode == 0 and "not answering" not in status.stdout + status.stderr, status.stdout
