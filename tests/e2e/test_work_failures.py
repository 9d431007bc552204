"""`plugkit work`'s failure paths, tried as a new user would: each says what happened and the
command that fixes it (the command worker, tests/support/work_agent.py, against the real runner)."""

import json
import sys
from pathlib import Path

import pytest

from tests.support.work_cli import Work, commit_file
from tests.support.agent import git, make_repo
from tests.support.person import person_cli

pytestmark = pytest.mark.e2e


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo", 'gates = "advisory"\n')


def test_refuses_a_worker_program_missing_from_path_at_start(shared_home, repo):
    w = Work(shared_home, repo, {})
    w.add("w1", "--verify", "true")
    w.env["PATH"] = "/usr/bin:/bin"  # no claude there
    done = w.cli("work", "--worker", "claude-code", ok=False)
    assert done.returncode == 2 and "'claude' is not on PATH" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "--worker command --run" in done.stderr, done.stderr
    assert w.prd()["w1"]["status"] == "pending"  # untouched
    assert "no plugkit work run" in w.cli("work", "status").stdout


def test_items_an_earlier_run_blocked_say_why_and_how_to_retry(shared_home, repo):
    w = Work(shared_home, repo, {"w1": commit_file("w1.txt")})
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


def test_the_second_attempt_is_told_why_the_first_failed(shared_home, repo):
    w = Work(shared_home, repo, {"w1": [commit_file("w1.txt"), [["prompt"], *commit_file("ok.txt")]]})
    w.add("w1", "--verify", "echo the check wants ok.txt; test -f ok.txt")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    assert w.items(run)["w1"]["state"] == "completed", json.dumps(run, indent=1)
    prompt = w.cli("work", "logs", "w1", "--all").stdout  # attempt 2's worker printed its prompt
    assert "The previous attempt failed" in prompt and "verify_failed" in prompt, prompt
    assert "exited with code 1" in prompt and "| the check wants ok.txt" in prompt, prompt


AGENT_RUN = ("--run", f"{sys.executable} {Path(__file__).resolve().parents[1] / 'support' / 'work_agent.py'}")


def test_rollback_of_a_critical_item_revokes_its_approval(shared_home, repo):
    w = Work(shared_home, repo, {"w1": commit_file("w1.txt")})
    w.add("w1", "--verify", "test -f w1.txt", "--risk", "critical")
    assert person_cli(w.home, "approve", "w1", cwd=w.repo, env=w.env).returncode == 0
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    assert w.items(run)["w1"]["state"] == "completed", run
    assert git(repo, "branch", "--list", "plugkit/w1").strip() == ""  # landed: its branch is gone
    done = w.cli("work", "rollback", "w1")
    assert "reset" in done.stdout and not (repo / "w1.txt").exists()
    assert "w1" in json.loads(w.cli("approve", "--list", "--json").stdout)["waiting"]
    assert "revoked" in w.items(w.status())["w1"]["message"]
    w.start()
    run = w.settled()
    assert w.items(run)["w1"]["state"] == "waiting" and not (repo / "w1.txt").exists(), run


def test_wait_exits_non_zero_when_the_run_halts_and_stop_without_a_run_says_so(shared_home, repo):
    w = Work(shared_home, repo, {"w1": commit_file("w1.txt")})
    w.add("w1", "--verify", "false")
    done = w.cli("work", *AGENT_RUN, "--afk", "--wait", "90", ok=False)
    assert done.returncode == 3 and "halted" in done.stdout, (done.stdout, done.stderr)
    done = w.cli("work", "stop", ok=False)
    assert done.returncode == 1 and "no live run to stop" in done.stderr, done.stderr


def test_logs_say_why_a_worker_never_started_and_status_wait_follows_an_approval(shared_home, repo):
    w = Work(shared_home, repo, {"w1": commit_file("w1.txt")})
    w.add("w1", "--verify", "test -f w1.txt", "--risk", "critical")
    w.start()
    w.until(lambda r: r["state"] == "waiting")
    said = w.cli("work", "logs", "w1").stdout
    assert "has not started a worker" in said and "approval" in said, said
    assert person_cli(w.home, "approve", "w1", cwd=w.repo, env=w.env).returncode == 0
    run = json.loads(w.cli("work", "status", "--json", "--wait", "60").stdout)["run"]
    assert run["state"] == "done" and w.items(run)["w1"]["state"] == "completed", run
