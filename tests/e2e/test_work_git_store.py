"""What a sandboxed worker can write of the repository's git store, attacked by a real
`--worker command` worker through the real CLI, runner, bwrap and git (issue 40, items 2 and 9):
it forges a loose object the person's `main` uses, or plants a symbolic ref in the writable
refs/heads/plugkit/ aimed at `main`. Each must leave `main` exactly as it was and hold the item
with the reason; a normal worker's commits (made by itself or by its `exec:` tasks) still land."""

import json
from pathlib import Path

import pytest

from tests.support.work_cli import Work, commit_file
from tests.support.agent import git, make_repo
from tests.support.forge import FORGE

pytestmark = pytest.mark.e2e

# Inside the worker, before it commits: the object main's README (HEAD's, still) is stored as,
# unlinked and written again (a valid loose object, zlib and all) holding the worker's text.


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "repo", 'gates = "advisory"\n')


def _held(w: Work, reason: str) -> dict:
    run = w.settled()
    it = w.items(run)["w1"]
    assert (it["state"], it["reason"]) == ("blocked", reason), json.dumps(run, indent=1)
    return it


def test_a_worker_forging_a_loose_object_changes_nothing_of_main(home, repo):
    w = Work(home, repo, {"w1": [["shell", FORGE], *commit_file("w1.txt")]})
    main = git(repo, "rev-parse", "main").strip()
    w.add("w1", "--verify", "test -f w1.txt")
    w.start("--afk")
    it = _held(w, "bad_objects")
    assert "FORGED" in w.cli("work", "logs", "w1").stdout  # it did write, somewhere
    assert "hashes to" in it["message"], it
    assert git(repo, "show", "main:README") == "a workspace\n"
    assert git(repo, "rev-parse", "main").strip() == main and not (repo / "w1.txt").exists()
    git(repo, "fsck", "--strict", "--no-dangling")  # raises on a hash-path mismatch
    (repo / "README").unlink()
    git(repo, "checkout", "--", "README")  # what every later checkout gets
    assert (repo / "README").read_text() == "a workspace\n"


def test_a_workers_commits_land_with_their_objects_checked_in(home, repo):
    # One commit by the worker itself, one by its `exec:` task (sandboxed like the worker).
    w = Work(home, repo, {"w1": [*commit_file("w1.txt"), ["write", "w2.txt", "two\n"],
                                 ["cli", "exec:bash", "git add -A && git commit -qm two && echo EXEC_COMMITTED"]]})
    w.add("w1", "--verify", "test -f w1.txt && test -f w2.txt")
    w.start()
    run = w.settled()
    it = w.items(run)["w1"]
    assert (it["state"], it["reason"]) == ("completed", "landed"), json.dumps(run, indent=1)
    assert "EXEC_COMMITTED" in w.cli("work", "logs", "w1").stdout
    assert git(repo, "show", "main:w2.txt") == "two\n"
    git(repo, "fsck", "--strict", "--no-dangling")
    assert not (repo / ".plugkit" / "worktrees" / ".objects-w1").exists()  # the private store went


# Planted in the writable refs/heads/plugkit/: a symlink git reads as a symbolic ref, and a
# symbolic-ref file. Undoing the "new ref" would follow either and delete main.
EVIL = '"$(git rev-parse --git-common-dir)/refs/heads/plugkit/evil"'
PLANTS = {"symlink_ref": f"ln -s refs/heads/main {EVIL}",
          "symref_file": f'printf "ref: refs/heads/main\\n" > {EVIL}'}


@pytest.mark.parametrize("plant", list(PLANTS))
def test_a_planted_symbolic_ref_neither_deletes_nor_moves_main(home, repo, plant):
    w = Work(home, repo, {"w1": [*commit_file("w1.txt"), ["shell", PLANTS[plant] + " && echo PLANTED"]]})
    main = git(repo, "rev-parse", "main").strip()
    w.add("w1", "--verify", "test -f w1.txt")
    w.start("--afk")
    it = _held(w, "symbolic_ref")
    assert "PLANTED" in w.cli("work", "logs", "w1").stdout
    assert "refs/heads/plugkit/evil" in it["message"], it
    assert git(repo, "rev-parse", "--verify", "refs/heads/main").strip() == main
    planted = repo / ".git" / "refs" / "heads" / "plugkit" / "evil"
    assert not planted.exists() and not planted.is_symlink()
    assert not (repo / "w1.txt").exists()
