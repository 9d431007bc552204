"""A `command` worker is told what it works on through its environment (issue 42): the item,
its subject, the check the runner will run and its branch, set by the runner over anything the
caller's environment says."""

import pytest

from tests.support.work_cli import Work
from tests.support.agent import make_repo

pytestmark = pytest.mark.e2e

# Writes what it was told into a file and commits it: the check then reads the landed file.
PROGRAM = ("sh -c 'for v in PLUGKIT_ITEM PLUGKIT_ITEM_SUBJECT PLUGKIT_VERIFY PLUGKIT_BRANCH; do "
           "printf \"%s=%s\\n\" \"$v\" \"$(printenv $v)\"; done > told.txt && git add told.txt && "
           "git commit -qm told'")


def test_a_command_worker_gets_its_item_subject_check_and_branch(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    w = Work(home, repo, {})
    w.add("w1", "--verify", "test -s told.txt")
    w.env["PLUGKIT_ITEM"] = "forged"  # the caller's own value never stands in for the runner's
    w.cli("work", "--run", PROGRAM, "--items", "w1")
    run = w.until(lambda r: r["ended_at"] is not None)
    assert w.items(run)["w1"]["state"] == "completed", run
    told = dict(line.split("=", 1) for line in (repo / "told.txt").read_text().splitlines())
    assert told == {"PLUGKIT_ITEM": "w1", "PLUGKIT_ITEM_SUBJECT": "make w1", "PLUGKIT_VERIFY": "test -s told.txt",
                    "PLUGKIT_BRANCH": "plugkit/w1"}


def test_logs_of_a_silent_red_check_say_it_was_red(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    w = Work(home, repo, {})
    w.add("w1", "--verify", "false")  # red, and silent
    w.cli("work", "--run", PROGRAM, "--items", "w1", "--afk")
    w.until(lambda r: r["ended_at"] is not None or r["state"] == "halted")
    said = w.cli("work", "logs", "w1", "--verify").stdout
    assert "printed nothing; the check was red" in said and "exited with code 1" in said, said
