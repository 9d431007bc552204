"""A worker stopped by its model's usage limit (issue 47 #2), through the real runner, real git and
the real sandbox: the command worker prints a host's own limit message. With a reset, the item is
parked without holding a slot and resumed after the reset in the worktree it left (uncommitted
files too), not counted as a failure; with none, it is held, naming the retry; --no-quota-wait
keeps the old behaviour (a failed attempt, retried)."""

import json
import os
import signal
import time

import pytest

from tests.support.procs import wait_gone
from tests.support.work_cli import Work, commit_file, repo  # noqa: F401  (repo: the fixture)

pytestmark = pytest.mark.e2e


def test_a_worker_on_a_usage_limit_is_parked_without_a_slot_and_resumed_in_its_worktree(home, repo):
    w = Work(home, repo, {
        # Attempt 1: a commit, a file left uncommitted, then Gemini's 429 with a reset 2 s ahead.
        "w1": [[*commit_file("w1a.txt"), ["write", "notes.txt", "not committed\n"], ["limit", "gemini", 2],
                ["exit", 1]],
               [["prompt"], ["shell", "test -f notes.txt || exit 3"], *commit_file("w1b.txt")]],
        "w2": [["sleep", 4], *commit_file("w2.txt")],  # runs in the slot w1 gave up while parked
        "w3": [["limit", "gemini-daily", None], ["exit", 1]]})  # a limit with no reset: held
    w.add("w1", "--verify", "test -f w1a.txt && test -f w1b.txt && test -f notes.txt")
    w.add("w2", "--verify", "test -f w2.txt")
    w.add("w3", "--verify", "test -f w3.txt")
    w.start("--parallel", "1")
    parked = w.until(lambda r: w.items(r)["w1"]["state"] == "waiting_quota"
                     and w.items(r)["w2"]["state"] != "queued", timeout=60)
    it = w.items(parked)["w1"]
    why = json.dumps(parked, indent=1)
    assert it["reason"] == "quota" and it["quota_until"] and "parked until" in it["message"], why
    assert "waits out a usage limit until" in (parked["halt"] or ""), why
    assert (repo / ".plugkit" / "worktrees" / "w1" / "notes.txt").exists()  # the worktree stays
    run = w.until(lambda r: r["ended_at"] is not None)
    items = w.items(run)
    why = json.dumps(run, indent=1)
    w1 = items["w1"]
    assert (w1["state"], w1["attempt"], w1["failures"], w1["quota_waits"]) == ("completed", 2, 0, 1), why
    assert items["w2"]["state"] == "completed" and items["w2"]["ended_at"] < w1["ended_at"], why
    assert (items["w3"]["state"], items["w3"]["reason"]) == ("blocked", "usage_limit"), why
    assert "no reset time" in items["w3"]["message"] and "--status pending" in items["w3"]["message"], why
    assert items["w3"]["failures"] == 0 and w.prd()["w3"]["status"] == "blocked", why
    assert all((repo / f).exists() for f in ("w1a.txt", "w1b.txt", "notes.txt", "w2.txt"))
    told = w.cli("work", "logs", "w1").stdout  # the resumed worker's prompt says where it stopped
    assert "your host hit its usage limit" in told and "has 1 commit(s) past its base" in told, told
    events = w.cli("work", "trace", "w1", "--attempt", "1").stdout
    assert "waiting_quota/quota: parked until" in events, events
    assert "tried again: resumed after the usage limit reset" in events, events


def test_no_quota_wait_fails_the_attempt_as_before(home, repo):
    w = Work(home, repo, {"w1": [[["limit", "claude-code", 2], ["exit", 1]], commit_file("w1.txt")]})
    w.add("w1", "--verify", "test -f w1.txt")
    started = time.time()
    w.start("--no-quota-wait")
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    why = json.dumps(run, indent=1)
    assert run["quota_wait"] is False, why
    assert "(--no-quota-wait)" in w.cli("work", "status").stdout
    assert (it["state"], it["attempt"], it["failures"], it["quota_waits"]) == ("completed", 2, 1, 0), why
    events = w.cli("work", "trace", "w1", "--attempt", "1").stdout
    assert "waiting_quota" not in events and "worker_exit" in events, events
    assert run["started_at"] >= started - 1


def test_a_parked_worker_ends_with_work_stop_and_a_reset_past_the_budget_is_held(home, repo):
    w = Work(home, repo, {
        "w1": [[["limit", "gemini", 900], ["exit", 1]], commit_file("w1.txt")],  # resets past the budget
        "w2": [[["write", "notes.txt", "x\n"], ["limit", "claude-code", 120], ["exit", 1]], commit_file("w2.txt")]})
    w.add("w1", "--verify", "test -f w1.txt")
    w.add("w2", "--verify", "test -f w2.txt")
    w.start("--parallel", "2", "--budget-min", "10")
    run = w.until(lambda r: w.items(r)["w2"]["state"] == "waiting_quota" and w.items(r)["w1"]["state"] == "blocked")
    w1 = w.items(run)["w1"]
    why = json.dumps(run, indent=1)
    assert w1["reason"] == "usage_limit" and "past the run's budget" in w1["message"], why
    assert "plugkit work --items w1" in w1["message"] and w1["failures"] == 0, why
    w.cli("work", "stop")
    run = w.until(lambda r: r["ended_at"] is not None, timeout=30)  # not the 2 minutes to the reset
    w2 = w.items(run)["w2"]
    why = json.dumps(run, indent=1)
    assert run["state"] == "stopped" and (w2["state"], w2["reason"]) == ("killed", "stopped"), why
    assert w2["failures"] == 0 and w.prd()["w2"]["status"] == "pending", why
    assert not (repo / ".plugkit" / "worktrees" / "w2").exists()  # a stop tidies up the kept worktree


def test_an_unattended_run_that_halts_holds_its_parked_worker_instead_of_resuming_it(home, repo):
    w = Work(home, repo, {"w1": [[["limit", "claude-code", 120], ["exit", 1]], commit_file("w1.txt")],
                          "w2": [["sleep", 1], ["limit", "gemini-daily", None], ["exit", 1]]})  # held: AFK halts
    w.add("w1", "--verify", "test -f w1.txt")
    w.add("w2", "--verify", "test -f w2.txt")
    w.start("--parallel", "2", "--afk")
    run = w.until(lambda r: r["ended_at"] is not None, timeout=60)  # not the 2 minutes to w1's reset
    items = w.items(run)
    why = json.dumps(run, indent=1)
    assert run["state"] == "halted" and "w2 blocked/usage_limit" in run["halt"], why
    assert (items["w1"]["state"], items["w1"]["reason"]) == ("blocked", "usage_limit"), why
    assert "the unattended run halts" in items["w1"]["message"] and w.prd()["w1"]["status"] == "blocked", why


def test_a_worker_parked_when_the_runner_dies_waits_out_its_reset_after_the_resume(home, repo):
    w = Work(home, repo, {"w1": [[*commit_file("w1a.txt"), ["write", "notes.txt", "not committed\n"],
                                  ["limit", "gemini", 4], ["exit", 1]],
                                 [["shell", "test -f notes.txt || exit 3"], *commit_file("w1b.txt")]]})
    w.add("w1", "--verify", "test -f w1a.txt && test -f w1b.txt && test -f notes.txt")
    w.start()
    w.until(lambda r: w.items(r)["w1"]["state"] == "waiting_quota", timeout=60)
    pid = home.discovery()["pid"]
    os.kill(pid, signal.SIGKILL)
    assert wait_gone(pid)
    home.cli("runner", "start")
    # Still parked from the first answer on (its reset not reached yet), not started at once.
    it = w.items(w.status())["w1"]
    assert it["state"] in ("waiting_quota", "spawning", "running", "verifying", "landing", "completed"), it
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    why = json.dumps(run, indent=1)
    assert (it["state"], it["failures"], it["quota_waits"], it["interruptions"]) == ("completed", 0, 1, 0), why
    assert it["ended_at"] >= it["quota_until"], why  # resumed after the reset, in the worktree it left
    assert (repo / "notes.txt").exists()
