"""A sandboxed `plugkit work` worker cannot aim the runner's git at a file outside: git appends to
a ref's reflog through a symbolic link, and the runner updates refs a worker could reach (a
sibling's branch it puts back, the worker's own branch it rebases, lands and drops) outside the
sandbox. Real CLI, real runner, real bwrap, real git; the worker is tests/fixtures/reflog_link_attack.py."""

import os
import sys
from pathlib import Path

from tests.support.agent import git, make_repo
from tests.support.work_cli import Work

import pytest

pytestmark = pytest.mark.e2e
ATTACK = Path(__file__).resolve().parents[1] / "fixtures" / "reflog_link_attack.py"


def test_a_worker_plants_no_reflog_link_the_runners_git_writes_through(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    git(repo, "branch", "plugkit/sibling")  # another item's branch, with its reflog
    was = git(repo, "rev-parse", "plugkit/sibling")
    victim = tmp_path / "victim.txt"
    victim.write_text("ORIGINAL\n")
    w = Work(home, repo, {})
    w.add("w1", "--verify", "test -f done.txt")
    w.cli("work", "--run", f"{sys.executable} {ATTACK} {victim} plugkit/sibling", "--json")
    run = w.until(lambda r: r["ended_at"] is not None)
    logs = w.cli("work", "logs", "w1", "--all").stdout
    assert "PLANT sibling_ref" in logs, logs
    assert victim.read_text() == "ORIGINAL\n", (victim.read_text(), logs)
    # No link the worker made is left where the runner's or the person's git would follow it.
    common = repo / ".git"
    links = [str(p) for p in common.rglob("*") if p.is_symlink()]
    assert links == [], links
    assert git(repo, "rev-parse", "plugkit/sibling") == was, "the sibling's branch moved"
    it = {i["id"]: i for i in run["items"]}["w1"]
    assert (it["state"], it["reason"]) == ("blocked", "symbolic_ref"), (it, logs)  # held for a person
    # The person's own git on the branch it got back writes nothing outside either.
    git(repo, "update-ref", "refs/heads/plugkit/sibling", "HEAD")
    assert victim.read_text() == "ORIGINAL\n"
    assert not os.path.islink(common / "logs" / "refs" / "heads" / "plugkit" / "sibling")


RACE = Path(__file__).resolve().parents[1] / "fixtures" / "reflog_race_attack.py"


def test_a_live_worker_plants_no_reflog_link_for_a_branch_the_runner_creates_later(home, tmp_path):
    """The sweep when a worker ends cannot stop a sibling still running: it plants the link after
    the sweep, before the runner creates the next item's branch."""
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    victim = tmp_path / "victim.txt"
    victim.write_text("ORIGINAL\n")
    w = Work(home, repo, {})
    for item in ("a1", "c1", "b1"):
        w.add(item, "--verify", "test -f done.txt")
    w.cli("work", "--parallel", "2", "--run", f"{sys.executable} {RACE} a1 c1 b1 {victim}", "--json")
    run = w.until(lambda r: r["ended_at"] is not None, timeout=150)
    logs = w.cli("work", "logs", "a1", "--all").stdout
    assert "PLANT next_reflog" in logs, logs
    assert victim.read_text() == "ORIGINAL\n", (victim.read_text(), logs, run)


def test_a_worker_that_committed_in_its_own_refs_dir_is_not_told_it_committed_nothing(home, tmp_path):
    """Its commit moves only its own refs dir until it ends: the Stop check reads that, not the
    repository's stale branch (which would show the committed file as an uncommitted change)."""
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    w = Work(home, repo, {"w1": [["write", "w1.txt", "done\n"], ["commit", "add w1.txt"], ["stop"]],
                          "w2": [["write", "w2.txt", "done\n"], ["stop"], ["commit", "add w2.txt"]]})
    w.add("w1", "--verify", "test -f w1.txt")
    w.add("w2", "--verify", "test -f w2.txt")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    said = {i: [ln for ln in w.cli("work", "logs", i).stdout.splitlines() if ln.startswith("stop answer:")]
            for i in ("w1", "w2")}
    assert len(said["w1"]) == 1 and "block" not in said["w1"][0], said  # committed: let through
    assert "1 uncommitted change(s) (w2.txt)" in said["w2"][0] and '"block"' in said["w2"][0], said
    assert {i["state"] for i in run["items"]} == {"completed"}, run
