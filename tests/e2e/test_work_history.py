"""A person reads past runs and what each worker did (issue 45 #5-6, issue 42): `work runs`
lists the kept runs; `work status RUN`, `logs --run`, `trace --run` and `rollback --run` reach
an earlier run's items, also after the runner restarted; `work trace ITEM` is the attempt's
journal as the runner witnessed it (first heartbeat, each tool call its hooks reported and the
answer, each exec: task, the check, the landing), led by what it did last; `work status
--follow` prints the same journal `work --wait` does."""

import json
import sys
from pathlib import Path

import pytest

from tests.support.work_cli import Work, commit_file
from tests.support.agent import make_repo, git

pytestmark = pytest.mark.e2e

AGENT_RUN = ("--run", f"{sys.executable} {Path(__file__).resolve().parents[1] / 'support' / 'work_agent.py'}")
W1 = [["hook", "Bash", {"command": "ls -la"}],
      ["hook", "Bash", {"command": "git push --force origin main"}],
      ["cli", "exec:bash", "echo traced-by-the-runner"],
      *commit_file("w1.txt")]


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo", 'gates = "advisory"\n')


def _runs(w: Work) -> list[dict]:
    return json.loads(w.cli("work", "runs", "--json").stdout)["runs"]


def test_an_earlier_runs_items_stay_reachable_and_its_trace_says_what_the_worker_did(home, repo):
    w = Work(home, repo, {"w1": W1, "w2": commit_file("w2.txt")})
    w.add("w1", "--verify", "test -f w1.txt", "--risk", "high")
    first = w.cli("work", *AGENT_RUN, "--items", "w1", "--wait", "120")
    assert "landed as" in first.stdout, first.stdout
    w.add("w2", "--verify", "false")
    second = w.cli("work", *AGENT_RUN, "--items", "w2", "--wait", "120", ok=False)
    assert second.returncode == 3 and "check red" in second.stdout, second.stdout

    runs = _runs(w)
    assert len(runs) == 2 and runs[1]["landed"] == ["w1"] and runs[0]["landed"] == [], runs
    old = runs[1]["id"]
    listed = w.cli("work", "runs").stdout
    assert listed.index(runs[0]["id"]) < listed.index(old) and "landed w1" in listed, listed

    # The latest run has no w1; the earlier one does, by its id or a prefix of it.
    elsewhere = w.cli("work", "logs", "w1", ok=False)
    assert elsewhere.returncode == 1 and f"it was in run {old}: add --run {old}" in elsewhere.stderr, elsewhere.stderr
    status = json.loads(w.cli("work", "status", old[:4], "--json").stdout)["run"]
    assert status["id"] == old and w.items(status)["w1"]["state"] == "completed", status
    check = w.items(status)["w1"]["verify_task_id"]
    assert f"task_{check} (the check) printed nothing; the check was green" in w.cli(
        "work", "logs", "w1", "--verify", "--run", old).stdout

    trace = w.cli("work", "trace", "w1", "--run", old).stdout
    head, *events = trace.splitlines()
    assert head.startswith(f"w1: attempt 1 of 1 in run {old}, completed/landed; last: landed as"), trace
    text = "\n".join(events)
    for said in ("worker started", "boot", "Bash ls -la: allowed", "Bash git push --force origin main: denied",
                 "exec:bash task_", "echo traced-by-the-runner", "check green", "landed as"):
        assert said in text, (said, trace)
    assert text.index("worker started") < text.index("Bash ls -la") < text.index("check green") < text.index("landed")

    # After a restart the runner reads the runs and their journals back.
    home.cli("runner", "restart", "--force", timeout=60)
    assert [r["id"] for r in _runs(w)] == [runs[0]["id"], old]
    assert trace.splitlines()[1:] == w.cli("work", "trace", "w1", "--run", old).stdout.splitlines()[1:]

    rolled = w.cli("work", "rollback", "w1", "--run", old)  # high risk: tagged before it landed
    assert "rolled back" in rolled.stdout and not (repo / "w1.txt").exists(), rolled.stdout
    assert git(repo, "log", "-1", "--format=%s").strip().startswith("Revert") or "reset" in rolled.stdout


def test_follow_prints_the_journal_and_a_bad_run_names_the_next_command(home, repo):
    w = Work(home, repo, {"w1": commit_file("w1.txt")})
    w.add("w1", "--verify", "test -f w1.txt")
    waited = w.cli("work", *AGENT_RUN, "--wait", "120").stdout
    followed = w.cli("work", "status", "--follow").stdout
    journal = [line for line in waited.splitlines() if line.startswith("+")]
    assert journal and [line for line in followed.splitlines() if line.startswith("+")] == journal, followed
    assert any(" w1 " in line and "landed as" in line for line in journal) and journal[-1].split()[-3::2] == ["run", "done"]

    print(waited)
    missing = w.cli("work", "status", "abcdef12", ok=False)
    assert missing.returncode == 1 and "`plugkit work runs`" in missing.stderr, missing.stderr
    bad = w.cli("work", "trace", "w1", "--run", "../x", ok=False)
    assert bad.returncode == 2 and "run" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    many = w.cli("work", "trace", "w1", "--attempt", "3", ok=False)
    assert many.returncode == 2 and "--attempt 1..1" in many.stderr, many.stderr
