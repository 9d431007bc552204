"""`plugkit work`'s failure paths, tried as a new user would: each says what happened and the
command that fixes it (the command worker, tests/support/work_agent.py, against the real runner)."""

import json
import subprocess
import sys

import pytest

from tests.e2e.test_work import Work, commit_file
from tests.support.agent import git, make_repo

pytestmark = pytest.mark.e2e


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo", 'gates = "advisory"\n')


def test_refuses_a_worker_program_missing_from_path_at_start(home, repo):
    w = Work(home, repo, {})
    w.add("w1", "--verify", "true")
    w.env["PATH"] = "/usr/bin:/bin"  # no claude there
    done = w.cli("work", "--worker", "claude-code", ok=False)
    assert done.returncode == 2 and "'claude' is not on PATH" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "--worker command --run" in done.stderr, done.stderr
    assert w.prd()["w1"]["status"] == "pending"  # untouched
    assert "no plugkit work run" in w.cli("work", "status").stdout


def test_items_an_earlier_run_blocked_say_why_and_how_to_retry(home, repo):
    w = Work(home, repo, {"w1": commit_file("w1.txt")})
    w.add("w1", "--verify", "false")
    w.start("--afk")
    run = w.until(lambda r: r["ended_at"] is not None)
    assert w.items(run)["w1"]["reason"] == "replan", run
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    why = json.dumps(run, indent=1)
    assert (it["state"], it["reason"]) == ("blocked", "held"), why
    assert it["message"].startswith("blocked (failed twice") and "verify_failed" in it["message"], why
    assert "`plugkit prd update w1 --status pending` to retry" in it["message"], why
    assert "plugkit prd update w1 --status pending" in run["halt"], why
    shown = w.cli("work", "status").stdout
    assert "w1" in shown and "blocked/held" in shown and "failed twice" in shown, shown


def test_the_second_attempt_is_told_why_the_first_failed(home, repo):
    w = Work(home, repo, {"w1": [commit_file("w1.txt"), [["prompt"], *commit_file("ok.txt")]]})
    w.add("w1", "--verify", "echo the check wants ok.txt; test -f ok.txt")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    assert w.items(run)["w1"]["state"] == "completed", json.dumps(run, indent=1)
    prompt = w.cli("work", "logs", "w1", "--all").stdout  # attempt 2's worker printed its prompt
    assert "The previous attempt failed" in prompt and "verify_failed" in prompt, prompt
    assert "exited with code 1" in prompt and "| the check wants ok.txt" in prompt, prompt
