"""The supervisor's end of a remote attempt fetches the node's commits back into the item's
worktree (runner.node.placing, in the gateway). Real git, no Ray: another worktree of the
person's repository being added at that moment (its placeholder HEAD of zeros) does not fail
the landing, and a HEAD that stays broken fails it with git's reason."""

import os
import threading

import pytest

from runner.node import placing as ray_driver
from tests.support.git_repos import commit, g, main_repo, person_git

ZEROS = "0" * 40


@pytest.fixture(autouse=True)
def gitenv(tmp_path, monkeypatch):
    return person_git(tmp_path, monkeypatch)


@pytest.fixture
def landing(tmp_path):
    """(item worktree on branch `item` at base, the bundle of the node's two commits, their tip,
    the HEAD file of another worktree of the same repository)."""
    repo = main_repo(tmp_path)
    base = g(repo, "rev-parse", "HEAD")
    node = str(tmp_path / "node")
    g(repo, "worktree", "add", "-q", "-b", "item", node, base)
    commit(node, "a.txt", "a\n")
    tip = commit(node, "b.txt", "b\n")
    bundle = str(tmp_path / "back.bundle")
    g(node, "bundle", "create", "-q", bundle, f"{base}..item")
    g(node, "reset", "-q", "--hard", base)  # the item's worktree here has none of the node's commits
    g(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "other"), base)
    with open(bundle, "rb") as fh:
        data = fh.read()
    return node, data, tip, os.path.join(repo, ".git", "worktrees", "other", "HEAD")


def test_a_worktree_being_added_meanwhile_does_not_fail_the_landing(landing):
    wt, data, tip, other_head = landing
    with open(other_head) as fh:
        real = fh.read()
    with open(other_head, "w") as fh:  # what `git worktree add` leaves for a moment
        fh.write(ZEROS + "\n")

    def added() -> None:
        with open(other_head, "w") as fh:
            fh.write(real)

    timer = threading.Timer(0.3, added)
    timer.start()
    try:
        ray_driver._land_locally(wt, "item", data)
    finally:
        timer.cancel()
    # The branch holds the node's commits; the worktree's files are not reset (the runner checks and
    # lands from the branch in a checkout of its own, never from the worker's worktree).
    assert g(wt, "rev-parse", "HEAD") == tip


def test_a_head_that_stays_broken_fails_the_landing_with_gits_reason(landing, monkeypatch):
    wt, data, _, other_head = landing
    monkeypatch.setattr(ray_driver, "PLACEHOLDER_WAIT_S", 0.2)
    with open(other_head, "w") as fh:
        fh.write(ZEROS + "\n")
    with pytest.raises(RuntimeError, match="git fetch of the node's commits: .*bad object worktrees/other/HEAD"):
        ray_driver._land_locally(wt, "item", data)
