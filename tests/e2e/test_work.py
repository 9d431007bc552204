"""`plugkit work` with the command worker (tests/support/work_agent.py), against the real
runner and real git: waves and parallel slots, landing only on the runner's own green
check, the two-pass rule, the stall watchdog, the budget, AFK halts and approvals, stop,
rollback, and the worker policy through the real hook (conflicts: test_work_queue.py)."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.agent import git
from tests.support.escapees import gone, kill_all, unique_seconds
from tests.support.load import stretched
from tests.support.person import person_cli
from tests.support.procs import wait_gone
from tests.support.runner_home import rpc
from tests.support.work_cli import Work, commit_file, repo  # noqa: F401  (repo: the fixture)

pytestmark = pytest.mark.e2e


def test_waves_in_parallel_land_only_on_green_and_halt_on_the_critical_item(shared_home, repo):
    w = Work(shared_home, repo, {
        "w1": [["sleep", 1.5], *commit_file("w1.txt")], "w2": [["sleep", 1.5], *commit_file("w2.txt")],
        "w3": [["cli", "approve", "w4"], *commit_file("w3.txt")], "w4": commit_file("w4.txt")})
    w.add("w1", "--verify", "test -f w1.txt")
    w.add("w2", "--verify", "test -f w2.txt")
    w.add("w3", "--verify", "test -f w1.txt && test -f w2.txt && test -f w3.txt", "--blocked-by", "w1",
          "--blocked-by", "w2")
    w.add("w4", "--verify", "test -f w4.txt", "--risk", "critical", "--blocked-by", "w3")
    w.start("--afk", "--parallel", "2")
    run = w.settled()
    items = w.items(run)
    assert run["state"] == "halted" and "plugkit approve w4" in run["halt"], run
    assert [items[i]["state"] for i in ("w1", "w2", "w3")] == ["completed"] * 3, run
    assert items["w4"]["state"] == "waiting", run
    # Two workers at once: each started before the other ended.
    w1, w2 = items["w1"], items["w2"]
    assert max(w1["phases"]["spawn"], w2["phases"]["spawn"]) < min(w1["phases"]["terminate"],
                                                                    w2["phases"]["terminate"]), run
    assert items["w3"]["phases"]["spawn"] >= max(w1["ended_at"], w2["ended_at"]), run
    # trigger -> spawn -> boot (its first output) -> terminate -> cleanup, in that order
    order = ["trigger", "spawn", "boot", "terminate", "cleanup"]
    got = w1["phases"]
    assert [p for p in order if p in got] == order and [got[p] for p in order] == sorted(got[p] for p in order), got
    for name in ("w1.txt", "w2.txt", "w3.txt"):
        assert (repo / name).exists(), name
    prd = w.prd()
    assert [prd[i]["status"] for i in ("w1", "w2", "w3", "w4")] == ["completed"] * 3 + ["pending"]
    assert all(prd[i]["evidence"] == [items[i]["receipt"]] for i in ("w1", "w2", "w3"))
    assert git(repo, "status", "--porcelain", "--untracked-files=all").strip() in ("", "M .prd", "?? .prd")
    # w3's worker tried to approve w4 itself: refused (its capability never approves).
    said = w.cli("work", "logs", "w3", "--all").stdout
    assert "cli rc=1" in said and "approval.grant is a person's" in said, said
    # A person approves from their own terminal: the halted run resumes by itself.
    approved = person_cli(w.home, "approve", "w4", cwd=w.repo, env=w.env)
    assert approved.returncode == 0, approved.stdout
    run = w.until(lambda r: r["ended_at"] is not None)
    assert run["state"] == "done" and w.items(run)["w4"]["state"] == "completed", run
    assert w.items(run)["w4"]["rollback_tag"] == "plugkit/pre-w4"
    assert (repo / "w4.txt").exists()
    receipts = json.loads(w.cli("evidence", "verify", "--json").stdout)
    assert receipts["ok"] and receipts["checked"] == 4, receipts
    # The critical item comes undone from its tag; it is pending again.
    done = w.cli("work", "rollback", "w4")
    assert "reset" in done.stdout and not (repo / "w4.txt").exists()
    assert w.prd()["w4"]["status"] == "pending"
    assert not (repo / ".plugkit" / "worktrees" / "w1").exists()
    assert git(repo, "branch", "--list", "plugkit/*").split() == []  # landed: their branches are gone
    assert git(repo, "tag", "--list", "plugkit/*").split() == ["plugkit/pre-w4"]  # the rollback point stays


def test_done_claimed_without_a_green_check_is_not_completed_and_goes_back_to_plan_after_two(shared_home, repo):
    w = Work(shared_home, repo, {"w1": [["write", "notes.txt", "I think it works"], ["commit", "wip"],
                                 ["say", "All done, the tests pass."]]})
    w.add("w1", "--verify", "test -f feature.txt")
    w.start("--afk")
    run = w.settled()
    it = w.items(run)["w1"]
    assert (it["state"], it["reason"], it["attempt"]) == ("blocked", "replan", 2), run
    assert "verify_failed" in it["message"] and run["state"] == "halted" and "replan" in run["halt"], run
    assert w.prd()["w1"]["status"] == "blocked" and not w.prd()["w1"]["evidence"]
    assert not (repo / "notes.txt").exists()  # nothing landed
    log = w.cli("work", "logs", "w1", "--verify").stdout
    assert "exited with" in log or log == "" or "feature" not in log  # the check's own output, bounded


def test_second_try_can_succeed_and_no_commits_is_rejected(shared_home, repo):
    w = Work(shared_home, repo, {"w1": [[["say", "forgot to commit"], ["write", "w1.txt", "x"]],
                                  commit_file("w1.txt")]})
    w.add("w1", "--verify", "test -f w1.txt")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    assert (it["state"], it["attempt"], run["state"]) == ("completed", 2, "done"), run
    assert (repo / "w1.txt").exists()


def test_a_silent_worker_is_ended_stalled_and_a_quiet_one_beating_through_hooks_is_not(shared_home, repo):
    w = Work(shared_home, repo, {"w1": [["say", "thinking"], ["hang"]],
                          "w2": [["beat", 5, 1.0], *commit_file("w2.txt")]})
    w.add("w1", "--verify", "true")
    w.add("w2", "--verify", "test -f w2.txt")
    # 3 s, three beats' worth; stretched on a loaded machine, where a beat (a CLI start) takes longer
    w.start("--stall-min", f"{stretched(3.0) / 60:.3g}")
    run = w.until(lambda r: r["ended_at"] is not None or all(
        i["state"] in ("completed", "blocked") for i in r["items"]), timeout=100)
    items = w.items(run)
    assert items["w1"]["state"] == "blocked" and "stalled" in items["w1"]["message"], run
    assert items["w2"]["state"] == "completed", run


def test_budget_halts_the_run_and_stop_returns_items_to_pending(shared_home, repo):
    w = Work(shared_home, repo, {"w1": [["hang"]], "w2": [["hang"]]})
    w.add("w1", "--verify", "true")
    w.start("--afk", "--budget-min", "0.05", "--items", "w1")
    run = w.until(lambda r: r["ended_at"] is not None)
    assert run["state"] == "halted" and "budget" in run["halt"], run
    assert (w.items(run)["w1"]["state"], w.items(run)["w1"]["reason"]) == ("timed_out", "budget"), run
    assert w.prd()["w1"]["status"] == "pending"
    w.add("w2", "--verify", "true")
    w.start("--items", "w2")
    w.until(lambda r: w.items(r)["w2"]["state"] == "running")
    run = json.loads(w.cli("work", "stop", "--json").stdout)["run"]
    assert run["state"] == "stopped" and (w.items(run)["w2"]["state"], w.items(run)["w2"]["reason"]) == (
        "killed", "stopped"), run
    assert w.prd()["w2"]["status"] == "pending"


def test_the_worker_policy_denies_destructive_calls_through_the_real_hook(shared_home, repo, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious\n")
    w = Work(shared_home, repo, {"w1": [["hook", "Bash", {"command": "rm -rf .."}],
                                 ["hook", "Bash", {"command": f"rm -rf {victim}"}],
                                 ["hook", "Write", {"file_path": str(repo / "README"), "content": "x"}],
                                 ["hook", "Bash", {"command": "sudo ls"}],
                                 ["hook", "Bash", {"command": "ls -la"}],
                                 ["cli", "work", "--run", "true"], ["cli", "work", "status"],
                                 *commit_file("w1.txt")]})
    log, answers = w.hook_answers()
    assert len(answers) == 5, log
    for answer in answers[:4]:
        assert '"permissionDecision": "deny"' in answer and "plugkit work" in answer, answer
    assert "deny" not in answers[4], answers[4]
    # A worker cannot start workers of its own (its capability never does); it sees the run it belongs to.
    assert "cli rc=1" in log and "work.start is a person's" in log, log
    assert "cli rc=0: run " in log and "w1" in log
    assert (victim / "keep.txt").exists() and (repo / "README").read_text() == "a workspace\n"


def test_what_a_run_refuses_up_front(shared_home, repo, tmp_path):
    w = Work(shared_home, repo, {})
    assert "no open work item" in w.cli("work", "--run", "true", ok=False).stderr
    w.add("w1")
    done = w.cli("work", "--run", "true", ok=False)
    assert done.returncode == 2 and "no verify command for w1" in done.stderr, done.stderr
    done = w.cli("work", "--items", "nope", "--run", "true", ok=False)
    assert done.returncode == 1 and "no work item nope" in done.stderr
    done = w.cli("work", "--worker", "command", ok=False)
    assert done.returncode == 2 and "--run" in done.stderr, done.stderr
    git(repo, "checkout", "-q", "--detach")
    (repo / ".plugkit" / "config.toml").write_text('verify = "true"\n')
    done = w.cli("work", "--run", "true", ok=False)
    assert "branch" in done.stderr and done.returncode == 1, done.stderr
    assert "no plugkit work run" in w.cli("work", "status").stdout


def test_merge_mode_lands_a_merge_commit_and_debug_shows_the_run(home, repo):
    w = Work(home, repo, {"w1": [["say", "one"], ["sleep", 0.3], ["say", "two"], *commit_file("w1.txt")]})
    config = repo / ".plugkit" / "config.toml"
    config.write_text(config.read_text() + 'work_merge = "merge"\n')  # the workspace says so
    git(repo, "commit", "-qam", "land work by merge commits")
    w.add("w1", "--verify", "test -f w1.txt", "--risk", "high")
    w.start()
    followed = w.cli("work", "logs", "w1", "--follow").stdout  # until the worker ends
    assert "one\n" in followed and followed.rstrip().endswith("two"), followed
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    assert (run["state"], it["state"], run["merge"]) == ("done", "completed", "merge"), run
    parents = git(repo, "log", "-1", "--format=%P", "main").split()
    assert len(parents) == 2 and it["landed"] == git(repo, "rev-parse", "main").strip(), parents
    assert git(repo, "rev-parse", "plugkit/pre-w1").strip() == parents[0]  # high risk: tagged first
    work_view = rpc(home, "debug.snapshot")["snapshot"]["work"]  # the same JSON as GET /debug
    assert work_view["runs"][0]["items"]["w1"]["state"] == "completed", work_view
    assert work_view["runs"][0]["items"]["w1"]["branch"] == "plugkit/w1" and "waves" in work_view["runs"][0]


def _kill_runner(home) -> None:
    pid = home.discovery()["pid"]
    os.kill(pid, signal.SIGKILL)
    assert wait_gone(pid)  # a zombie is dead too: /proc/<pid> outlives the runner until it is reaped


def _branch_moved(repo: Path, branch: str) -> bool:
    """The live worker committed: its branch moved in its own refs dir (runner/system/worker_refs.py),
    which the repository's ref follows only once the worker has ended."""
    own = repo / ".plugkit" / "worktrees" / f".refs-{branch.removeprefix('plugkit/')}" / "heads" / branch.removeprefix("plugkit/")
    ref = own.read_text().strip() if own.is_file() else subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "-q", "--verify", f"refs/heads/{branch}"],
        capture_output=True, text=True).stdout.strip()
    return bool(ref) and ref != git(repo, "rev-parse", "main").strip()


def test_a_runner_killed_mid_run_resumes_it_keeping_the_commits_and_lands_both_items(home, repo):
    w = Work(home, repo, {
        # The first attempts are cut by the kill: w1 after a commit, w2 before any.
        "w1": [[*commit_file("w1.txt"), ["say", "committed"], ["hang"]],
               [["prompt"], *commit_file("w1b.txt")]],
        "w2": [[["say", "working"], ["hang"]], [*commit_file("w2.txt")]]})
    w.add("w1", "--verify", "test -f w1.txt && test -f w1b.txt")  # green only if the kept commit is there
    w.add("w2", "--verify", "test -f w2.txt")
    w.start("--parallel", "2")
    w.until(lambda r: all(i["state"] == "running" for i in r["items"]) and _branch_moved(repo, "plugkit/w1"))
    _kill_runner(home)
    home.cli("runner", "start")
    # From the first answer on, .prd and the run agree: both items are in progress again.
    run = w.status()
    items, prd = w.items(run), w.prd()
    why = json.dumps(run, indent=1)
    assert run["ended_at"] is None and run["state"] == "running", why
    for item in ("w1", "w2"):
        assert items[item]["state"] in ("spawning", "running", "verifying", "landing", "completed"), why
        assert prd[item]["status"] in ("in_progress", "completed"), (prd, why)
    run = w.until(lambda r: r["ended_at"] is not None)
    items = w.items(run)
    why = json.dumps(run, indent=1)
    assert run["state"] == "done", why
    for item in ("w1", "w2"):  # the interruption is not a failed pass
        it = items[item]
        assert (it["state"], it["attempt"], it["failures"], it["interruptions"]) == ("completed", 2, 0, 1), why
    assert all((repo / f).exists() for f in ("w1.txt", "w1b.txt", "w2.txt"))
    told = w.cli("work", "logs", "w1").stdout  # the resumed worker's prompt
    assert "You were interrupted" in told and "keeps its 1 commit(s): add w1.txt" in told, told
    events = w.cli("work", "trace", "w1", "--attempt", "1").stdout
    assert "tried again: the runner stopped during attempt 1; resumed with the commits" in events, events


def test_a_runner_restarted_in_place_resumes_its_run_on_the_kept_commits(home, repo):
    w = Work(home, repo, {"w1": [[*commit_file("w1.txt"), ["say", "committed"], ["hang"]],
                                 [*commit_file("w1b.txt")]]})
    w.add("w1", "--verify", "test -f w1.txt && test -f w1b.txt")
    w.start()
    w.until(lambda r: w.items(r)["w1"]["state"] == "running" and _branch_moved(repo, "plugkit/w1"))
    pid = home.discovery()["pid"]
    w.cli("runner", "restart")  # an upgrade: the same pid, a new image, the run driven on
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    why = json.dumps(run, indent=1)
    assert home.discovery()["pid"] == pid, why
    assert run["state"] == "done", why
    assert (it["state"], it["attempt"], it["failures"], it["interruptions"]) == ("completed", 2, 0, 1), why


def test_a_ref_moved_just_before_the_runner_died_is_put_back_at_the_resume(home, repo):
    # --no-sandbox: the worker can move main itself; only the RefGuard's snapshot, kept on disk
    # by the dead runner, tells the next runner what main was.
    w = Work(home, repo, {"w1": [[["write", "bad.txt", "unchecked\n"], ["commit", "forged"],
                                  ["shell", "git update-ref refs/heads/main HEAD && git reset -q --hard HEAD~1"],
                                  *commit_file("w1.txt"), ["hang"]],
                                 [*commit_file("w1b.txt")]]})
    main = git(repo, "rev-parse", "main").strip()
    w.add("w1", "--verify", "test -f w1.txt")
    w.start("--no-sandbox")
    w.until(lambda r: git(repo, "rev-parse", "main").strip() != main and _branch_moved(repo, "plugkit/w1"))
    _kill_runner(home)
    home.cli("runner", "start")
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    why = json.dumps(run, indent=1)
    assert (it["state"], it["reason"]) == ("rejected", "refs_moved"), why
    assert git(repo, "rev-parse", "main").strip() == main, why  # main as it was
    assert "refs/plugkit/evidence/" in it["message"] and w.prd()["w1"]["status"] == "blocked", why
    assert not (repo / "bad.txt").exists()


def test_a_workspace_that_says_work_resume_false_gets_the_run_halted_and_the_next_run_finishes(home, repo):
    w = Work(home, repo, {"w1": [["say", "working"], ["hang"]]})
    config = repo / ".plugkit" / "config.toml"
    config.write_text(config.read_text() + "work_resume = false\n")
    git(repo, "commit", "-qam", "no resume here")
    w.add("w1", "--verify", "test -f w1.txt")
    w.start()
    w.until(lambda r: w.items(r)["w1"]["state"] == "running")
    _kill_runner(home)
    # A new runner settles the dead run by itself: .prd agrees with it before any work.* call.
    home.cli("runner", "start")
    deadline = time.monotonic() + 30
    while w.prd()["w1"]["status"] != "pending" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert w.prd()["w1"]["status"] == "pending", w.prd()
    run = w.status()  # from the run's file
    it = w.items(run)["w1"]
    assert run["state"] == "halted" and "work_resume = false" in run["halt"], run
    assert (it["state"], it["reason"]) == ("killed", "runner_restarted"), run
    w.plan_file.write_text(json.dumps({"w1": commit_file("w1.txt")}))  # the next run's worker does the work
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    assert run["state"] == "done" and (repo / "w1.txt").exists(), run


def test_a_branch_that_edits_the_plan_or_its_checks_never_lands(shared_home, repo):
    w = Work(shared_home, repo, {"w1": [*commit_file("w1.txt"), ["write", ".plugkit/config.toml", 'verify = "true"\n'],
                                 ["commit", "make every check pass"]]})
    w.add("w1", "--verify", "test -f w1.txt")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    assert (it["state"], it["reason"]) == ("blocked", "replan") and "control_files" in it["message"], run
    assert "true" not in (repo / ".plugkit" / "config.toml").read_text() and not (repo / "w1.txt").exists()


def test_a_file_left_uncommitted_never_turns_the_check_green(shared_home, repo):
    w = Work(shared_home, repo, {"w1": [*commit_file("w1.txt"), ["write", "feature.txt", "not committed"]]})
    w.add("w1", "--verify", "test -f feature.txt")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    assert (it["state"], it["reason"]) == ("blocked", "replan") and "verify_failed" in it["message"], run
    assert not (repo / "w1.txt").exists()


@pytest.mark.parametrize("cgroups", ["1", "0"])
def test_what_a_worker_leaves_running_dies_with_it(home, repo, cgroups):
    seconds = unique_seconds()
    w = Work(home, repo, {"w1": [["shell", f"setsid env -i sleep {seconds} &"], ["sleep", 0.5],
                                 *commit_file("w1.txt")]})
    w.add("w1", "--verify", "test -f w1.txt")
    assert home.cli("runner", "start", env={"PLUGKIT_CGROUPS": cgroups}).returncode == 0
    try:
        w.start()
        run = w.until(lambda r: r["ended_at"] is not None)
        assert w.items(run)["w1"]["state"] == "completed", run
        assert gone(seconds, within=15), "the worker's escapee outlived it"
    finally:
        kill_all(seconds)

