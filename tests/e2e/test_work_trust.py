"""What a sandboxed worker writes is never run or trusted by the runner outside the sandbox
(issue 40: items 1, 8, 10), through the real CLI, the real runner, real bwrap and real git,
with a hostile command worker (tests/support/work_agent.py):

- the worktree's git config (`config.worktree`: fsmonitor, hooksPath) and its `.git` file
  (`gitdir:`) are the runner's: a program they name never runs outside the sandbox;
- the check runs on exactly the committed tree (a fresh checkout of the commit), so a file
  the worker left uncommitted, even one its committed .gitignore hides, cannot turn it green;
- the check holds the worker's credential scope, not the person's whole environment.
"""

import json
from pathlib import Path

import pytest

from tests.support.work_cli import Work, commit_file
from tests.support.agent import git, make_repo

pytestmark = pytest.mark.e2e


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "repo", 'gates = "advisory"\n')


def _fsmonitor(marker: Path) -> list:
    return [["shell", f"printf '[core]\\n\\tfsmonitor = touch {marker}; false\\n' >> "
                      '"$(git rev-parse --git-dir)/config.worktree" || echo CONFIG_DENIED']]


def _hooks_path(marker: Path) -> list:
    return [["write", "hooks/post-checkout", f"#!/bin/sh\ntouch {marker}\n"],
            ["shell", "chmod +x hooks/post-checkout; printf '[core]\\n\\thooksPath = %s/hooks\\n' \"$PWD\" >> "
                      '"$(git rev-parse --git-dir)/config.worktree" || echo CONFIG_DENIED'],
            ["commit", "hooks"]]  # committed: a clean-up of the worktree would not drop it


def _gitdir(marker: Path) -> list:
    # A repository of its own whose config names the program, then the worktree's .git file
    # pointed at it: git run in the worktree would discover that repository, not the real one.
    return [["shell", f"git init -q evil && printf '[core]\\n\\tfsmonitor = touch {marker}; false\\n' "
                      '>> evil/.git/config && { echo "gitdir: $PWD/evil/.git" > .git || echo GITDIR_DENIED; }']]


ATTACKS = {"fsmonitor_in_config_worktree": (_fsmonitor, ()),
           "hooks_path_in_config_worktree": (_hooks_path, ("--merge", "merge")),  # the runner checks out there
           "gitdir_file_rewritten": (_gitdir, ())}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_git_state_the_worker_writes_runs_nothing_outside_the_sandbox(home, repo, tmp_path, attack):
    plant, flags = ATTACKS[attack]
    marker = tmp_path / f"ran-outside-{attack}"  # outside the worktree: the sandboxed worker cannot write it
    w = Work(home, repo, {"w1": [*commit_file("w1.txt"), *plant(marker)]})
    w.add("w1", "--verify", "test -f w1.txt")
    w.start("--afk", *flags)
    run = w.until(lambda r: r["ended_at"] is not None)
    assert not marker.exists(), f"the runner ran the worker's program outside its sandbox ({attack})"
    it = w.items(run)["w1"]
    assert it["state"] == "completed", json.dumps(run, indent=1)  # its committed work still lands
    assert (repo / "w1.txt").exists()


def test_an_ignored_file_left_uncommitted_never_turns_the_check_green(home, repo):
    # The committed .gitignore hides feature.txt, which the worker leaves beside its commit: a
    # clean-up of the worker's tree (reset --hard, clean -fd) keeps it; a fresh checkout has none.
    w = Work(home, repo, {"w1": [["write", ".gitignore", "feature.txt\n"], *commit_file("w1.txt"),
                                 ["write", "feature.txt", "never committed\n"]]})
    w.add("w1", "--verify", "test -f feature.txt")
    w.start("--afk")
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    assert (it["state"], it["reason"]) == ("blocked", "replan") and "verify_failed" in it["message"], \
        json.dumps(run, indent=1)
    assert not (repo / "w1.txt").exists() and not (repo / ".gitignore").exists()
    assert git(repo, "log", "--format=%s", "main").count("add w1.txt") == 0


def test_the_check_holds_the_workers_scope_not_the_persons_environment(home, repo):
    # The worker's app.py, imported by the check, prints what it can read: the person's exported
    # secrets must not be there; what the check needs to run (PATH, HOME, a granted name) is.
    app = "import os\nprint('\\n'.join(f'{k}={v}' for k, v in sorted(os.environ.items())))\n"
    w = Work(home, repo, {"w1": [["write", "app.py", app], ["commit", "app"]]})
    w.env.update(AWS_SECRET_ACCESS_KEY="prod-secret-4d1", MY_DEPLOY_TOKEN="custom-secret-9e2")
    w.add("w1", "--verify", 'python3 -c "import app" && test -n "$PATH" && test -n "$HOME"')
    w.start("--afk")
    run = w.until(lambda r: r["ended_at"] is not None)
    assert w.items(run)["w1"]["state"] == "completed", json.dumps(run, indent=1)
    seen = w.cli("work", "logs", "w1", "--verify", "--all").stdout
    assert "PLUGKIT_E2E_WORK_PLAN=" in seen and "PATH=" in seen, seen  # granted, and base
    assert "prod-secret-4d1" not in seen and "custom-secret-9e2" not in seen, seen


def test_what_lands_is_the_commit_that_was_checked_even_if_the_check_moves_the_branch(home, repo):
    # The check runs the worker's code, which can commit and move the item's branch from inside
    # the check's sandbox (its refs/heads/plugkit/ is writable there): landing must take the
    # commit it checked, never the branch read again.
    move = ("import subprocess\nsubprocess.run('echo unchecked > evil.txt && git add evil.txt && "
            "git commit -qm evil && git update-ref refs/heads/plugkit/w1 HEAD && echo BRANCH_MOVED', shell=True)\n")
    w = Work(home, repo, {"w1": [["write", "app.py", move], ["commit", "app"]]})
    w.add("w1", "--verify", 'python3 -c "import app"')
    w.start("--afk")
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    assert it["state"] == "completed", json.dumps(run, indent=1)
    logs = w.cli("work", "logs", "w1", "--verify", "--all").stdout
    # The attack ran: it moved the branch, or (the check's object store is read-only in its sandbox)
    # it could not even write its commit. Either way what landed is what was checked.
    assert "BRANCH_MOVED" in logs or "Read-only file system" in logs, logs
    assert git(repo, "log", "--format=%s", "main").splitlines()[0] == "app"
    assert not (repo / "evil.txt").exists()
