"""The node side of a remote attempt shares one clone of the project among the attempts placed
on that node (runner.node.clone, runner.node.task). Real git, no Ray: attempts that fetch and
make worktrees at once all get their worktree, and one that fails leaves nothing behind."""

import os
import subprocess
import threading

import pytest

from plugkit.protocol.node import NodeAttempt
from runner.node import clone, task
from runner.system.subreaper import start_ticks
from tests.support.git_repos import commit, g, main_repo, person_git


@pytest.fixture(autouse=True)
def gitenv(tmp_path, monkeypatch):
    return person_git(tmp_path, monkeypatch)


def bundle_of(repo: str, branch: str, tmp) -> bytes:
    path = str(tmp / f"{branch}.bundle")
    g(repo, "bundle", "create", "-q", path, f"refs/heads/{branch}")
    with open(path, "rb") as fh:
        return fh.read()


def test_attempts_fetching_and_making_worktrees_at_once_all_get_theirs(tmp_path):
    # `git worktree add` writes a placeholder HEAD before the real one; a fetch by another
    # attempt that saw it failed with "bad object worktrees/wt/HEAD".
    repo, root = main_repo(tmp_path), str(tmp_path / "node")
    base = g(repo, "rev-parse", "HEAD")
    bundles = {}
    for i in range(8):
        g(repo, "checkout", "-q", "-b", f"b{i}", base)
        commit(repo, f"f{i}.txt", f"{i}\n")
        bundles[f"b{i}"] = bundle_of(repo, f"b{i}", tmp_path)
    failures, made = [], []

    def attempt(branch: str) -> None:
        for round_ in range(4):
            tmp = os.path.join(root, "tmp", f"{branch}-{round_}")
            os.makedirs(tmp)
            cache = wt = None
            try:
                cache, wt = clone.checkout(root, repo, branch, base, bundles[branch], tmp)
                made.append(g(wt, "rev-parse", "--abbrev-ref", "HEAD"))
            except Exception as exc:  # noqa: BLE001 - every failure is the finding
                failures.append(f"{branch}: {exc}")
            finally:
                clone.tidy(cache or clone.cache_dir(root, repo), wt or os.path.join(tmp, "wt"), tmp, branch)

    threads = [threading.Thread(target=attempt, args=(b,)) for b in bundles]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert len(made) == 32
    cache = clone.cache_dir(root, repo)
    assert g(cache, "worktree", "list", "--porcelain").count("worktree ") == 1  # only the bare clone
    assert os.listdir(os.path.join(root, "tmp")) == []
    # every branch's tip stayed, so the next attempt's bundle can leave it out
    kept = g(cache, "for-each-ref", "--format=%(objectname)", "refs/plugkit-in/").split()
    assert sorted(kept) == sorted(g(repo, "rev-parse", b) for b in bundles)


def test_an_attempt_that_fails_before_its_worker_leaves_no_directory_or_worktree(tmp_path, monkeypatch):
    # A leftover attempt directory reads as an attempt running on that node.
    repo, root = main_repo(tmp_path), str(tmp_path / "node")
    monkeypatch.setenv(clone.NODE_DIR_VAR, root)
    g(repo, "checkout", "-q", "-b", "b")
    commit(repo, "f.txt", "f\n")
    spec = NodeAttempt(repo_key=repo, branch="b", base="0" * 40, local_worktree=repo, argv=["true"], env={},
                       session="s-gone", run="r1", item="w1", attempt=1, kind="command")
    steps = task.attempt(bundle_of(repo, "b", tmp_path), spec.model_dump(), "node-1", "127.0.0.1")
    assert next(steps)["kind"] == "node"
    with pytest.raises(RuntimeError, match="git worktree add"):
        next(steps)
    assert os.listdir(os.path.join(root, "tmp")) == []
    cache = clone.cache_dir(root, repo)
    assert g(cache, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_an_abandoned_attempts_directory_and_worktree_go_and_its_branch_is_free_again(tmp_path):
    # A Ray worker process killed before its `finally` ran left its attempt directory (a whole
    # checkout), and the clone's registration of its worktree held the item's branch (from git
    # 2.43 the item's next attempt on this node could not check it out).
    repo, root = main_repo(tmp_path), str(tmp_path / "node")
    base = g(repo, "rev-parse", "HEAD")
    g(repo, "checkout", "-q", "-b", "b")
    commit(repo, "f.txt", "f\n")
    bundle = bundle_of(repo, "b", tmp_path)
    # Its start time read while it surely lives (a `sleep 0` may already be a zombie when read,
    # and a zombie has no start time to record), then it dies.
    dead = subprocess.Popen(["sleep", "60"])
    ticks = start_ticks(dead.pid)
    dead.kill()
    dead.wait()
    assert ticks is not None
    stale = clone.begin(root)
    clone.checkout(root, repo, "b", base, bundle, stale)
    with open(os.path.join(stale, clone.OWNER_FILE), "w") as fh:  # its owner died mid-attempt
        fh.write(f"{dead.pid} {ticks}")
    live = clone.begin(root)  # this process's: never taken for abandoned
    fresh = os.path.join(root, "tmp", "attempt-new")  # no owner file yet: a new attempt's
    os.makedirs(fresh)

    again = clone.begin(root)
    cache, wt = clone.checkout(root, repo, "b", base, bundle, again)
    assert g(wt, "rev-parse", "--abbrev-ref", "HEAD") == "b"
    assert not os.path.exists(stale) and os.path.isdir(live) and os.path.isdir(fresh)
    listed = g(cache, "worktree", "list", "--porcelain")
    assert stale not in listed and listed.count("worktree ") == 2, listed


def test_an_owner_whose_start_time_is_unknown_is_not_taken_for_alive(tmp_path):
    # The racy class: an owner's start time read from /proc once it was a zombie is None, and
    # "None" recorded then matched the None of a dead pid later: a dead owner looked alive and
    # its attempt (a whole checkout, and the branch it held) stayed for good.
    gone = subprocess.Popen(["true"])
    gone.wait()
    attempt = clone.begin(str(tmp_path))
    with open(os.path.join(attempt, clone.OWNER_FILE), "w") as fh:
        fh.write(f"{gone.pid} None")
    assert clone._abandoned(attempt)
    assert not clone._abandoned(clone.begin(str(tmp_path)))  # this live process's own

