"""CI confirmed before COMPLETE (issue 44 #4), through the real runner and CLI in a real git
repository: with `ci` set, VERIFY -> COMPLETE holds until the runner itself has asked CI about
HEAD and heard green: GitHub and GitLab from a fake API on loopback (pages, pending, re-runs,
a token without scope), `local` by running the CI command in a clean clone of HEAD."""

import json
import os
import stat
import sys

import pytest
from pydantic import ValidationError

from plugkit.protocol.lifecycle import GateCiParams

from tests.support.agent import Agent, git, make_repo
from tests.support.fake_ci import FakeCI

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake():
    server = FakeCI()
    yield server
    server.close()


def to_verify(agent: Agent, repo) -> str:
    agent.hook("SessionStart", source="startup")
    agent.to_verify()
    return git(repo, "rev-parse", "HEAD").strip()


def ci(agent: Agent, *args: str) -> tuple[int, dict, str]:
    where = ("--session", agent.session, "--cwd", str(agent.repo))
    done = agent.home.cli("gate", "ci", *args, *where, timeout=90)
    shown = agent.home.cli("gate", "ci", "--json", *args, *where, timeout=90)
    return done.returncode, json.loads(shown.stdout), done.stdout


def held(agent: Agent) -> str:
    refused = agent.plugkit("gate", "advance", "COMPLETE", ok=False)
    assert refused.returncode == 1, refused.stdout
    return next(line for line in refused.stdout.splitlines() if "ci_green" in line)


def test_github_red_on_a_later_page_then_a_rerun_green_lets_complete_through(home, tmp_path, fake):
    repo = make_repo(tmp_path / "repo", f'gates = "enforce"\nverify = "true"\nci = "github"\n'
                                        f'ci_repo = "acme/app"\nci_api_url = "{fake.url}"\n')
    token = home.path / "ci" / "github-token"
    home.path.mkdir(mode=0o700, exist_ok=True)
    token.parent.mkdir(mode=0o700)
    token.write_text("ghs_runner_held\n")
    token.chmod(0o600)
    agent = Agent(home, repo)
    sha = to_verify(agent, repo)
    assert "not confirmed (github): plugkit gate ci" in held(agent)

    code, r, shown = ci(agent)  # no check run yet
    assert code == 1 and r["state"] == "pending" and r["sha"] == sha and "next: plugkit gate ci --wait" in shown

    fake.refuse = 403
    code, r, _ = ci(agent)
    assert code == 1 and r["state"] == "error" and "Checks: read" in r["note"], r
    assert "error on" in held(agent)
    fake.refuse = 0

    fake.check_runs = [{"id": 1, "name": "lint", "status": "completed", "conclusion": "success"},
                       {"id": 2, "name": "build", "status": "completed", "conclusion": "success"},
                       {"id": 3, "name": "tests", "status": "completed", "conclusion": "failure"}]
    fake.logs[3] = "collected 40 items\nFAILED tests/test_app.py::test_it - assert 1 == 2\n"
    code, r, shown = ci(agent)  # the red run is on the second page
    assert code == 1 and r["state"] == "red" and "'tests' failure" in r["note"], r
    assert "FAILED tests/test_app.py::test_it" in shown and "the failing job's log ends" in shown
    assert "red on" in held(agent)

    fake.check_runs.append({"id": 4, "name": "tests", "status": "completed", "conclusion": "success"})  # re-run
    code, r, _ = ci(agent)
    assert code == 0 and r["state"] == "green" and "3 check run(s) passed" in r["note"], r
    assert {h.get("Authorization") for _, h in fake.seen} == {"Bearer ghs_runner_held"}
    agent.plugkit("gate", "advance", "COMPLETE")
    assert agent.phase() == "COMPLETE"


def test_a_token_in_the_call_is_refused_and_a_new_commit_needs_ci_again(home, tmp_path, fake, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "from-the-runners-environment")  # the runner starts with it
    repo = make_repo(tmp_path / "repo", f'gates = "enforce"\nverify = "true"\nci = "github"\n'
                                        f'ci_repo = "acme/app"\nci_api_url = "{fake.url}"\n')
    agent = Agent(home, repo)
    to_verify(agent, repo)
    fake.check_runs = [{"id": 9, "name": "tests", "status": "in_progress", "conclusion": None}]
    fake.flip_after = 2  # pending twice (1 s, then 2 s apart), then green: --wait asks again until then
    code, r, _ = ci(agent, "--wait", "30")
    assert code == 0 and r["state"] == "green", r
    assert {h.get("Authorization") for _, h in fake.seen} == {"Bearer from-the-runners-environment"}
    # The call has no place for a token: one sent with it is refused by the wire's model.
    with pytest.raises(ValidationError, match="token"):
        GateCiParams.model_validate({"session_id": "s", "cwd": str(repo), "token": "agents-own"})
    # A commit after the confirmation: HEAD moved, CI must be asked again.
    (repo / "more.txt").write_text("more\n")
    git(repo, "add", "more.txt")
    git(repo, "commit", "-q", "-m", "more")
    assert "stale: confirmed on" in held(agent)


def test_gitlab_failed_pipeline_names_its_job_from_a_later_page(home, tmp_path, fake, monkeypatch):
    monkeypatch.setenv("GITLAB_TOKEN", "glpat-runner")
    repo = make_repo(tmp_path / "repo", f'gates = "enforce"\nverify = "true"\nci = "gitlab"\n'
                                        f'ci_api_url = "{fake.url}"\n')
    git(repo, "remote", "add", "origin", "git@gitlab.example:group/sub/app.git")  # the repository, read from origin
    agent = Agent(home, repo)
    sha = to_verify(agent, repo)
    fake.pipelines = [{"id": 7, "sha": sha, "status": "failed"}, {"id": 6, "sha": sha, "status": "failed"}]
    fake.jobs = [{"id": 70, "name": "lint", "status": "success"}, {"id": 71, "name": "build", "status": "success"},
                 {"id": 72, "name": "unit", "status": "failed", "allow_failure": False}]
    fake.logs[72] = "$ pytest\n1 failed\nERROR: Job failed: exit code 1\n"
    code, r, shown = ci(agent)
    assert code == 1 and r["state"] == "red" and "job 'unit' failed in pipeline 7" in r["note"], r
    assert "ERROR: Job failed" in shown
    assert any("/projects/group%2Fsub%2Fapp/pipelines?sha=" + sha in path for path, _ in fake.seen)
    assert {h.get("PRIVATE-TOKEN") for _, h in fake.seen} == {"glpat-runner"}
    fake.pipelines.insert(0, {"id": 8, "sha": sha, "status": "running"})  # retried: the newest counts
    assert ci(agent)[1]["state"] == "pending"
    fake.pipelines[0]["status"] = "success"
    assert ci(agent)[1]["state"] == "green"
    agent.plugkit("gate", "advance", "COMPLETE")


def test_local_ci_runs_in_a_clean_clone_so_a_file_only_in_the_working_tree_fails(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "enforce"\nverify = "true"\nci = "local"\n'
                                        'ci_command = "test -f generated.txt && echo ci-saw-it"\n')
    (repo / ".gitignore").write_text("generated.txt\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    (repo / "generated.txt").write_text("only here\n")  # ignored: the tree is clean, the file is not committed
    agent = Agent(home, repo)
    to_verify(agent, repo)
    code, r, _ = ci(agent)
    assert code == 1 and r["state"] == "red" and "exit 1 in a clean clone" in r["note"], r
    (repo / ".gitignore").write_text("")
    git(repo, "add", ".gitignore", "generated.txt")
    git(repo, "commit", "-q", "-m", "commit it")
    code, r, _ = ci(agent)
    assert code == 0 and r["state"] == "green", r
    assert not [p for p in (home.path / "ci").iterdir() if p.name.startswith("clone-")]  # the clone is gone
    mode = stat.S_IMODE(os.stat(home.path / "ci").st_mode)
    assert mode == 0o700, oct(mode)


def test_work_ci_lands_only_after_ci_is_green_on_the_pushed_branch_and_red_reaches_the_next_attempt(
        home, tmp_path, fake, monkeypatch):
    from tests.support.work_cli import AGENT, Work, commit_file

    monkeypatch.setenv("GITHUB_TOKEN", "ghs_runner")
    repo = make_repo(tmp_path / "repo", f'gates = "advisory"\nci = "github"\nci_repo = "acme/app"\n'
                                        f'ci_api_url = "{fake.url}"\nwork_ci = true\n')
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    w = Work(home, repo, {"w1": [["prompt"], *commit_file("w1.txt")]})
    w.add("w1", "--verify", "test -f w1.txt")
    fake.check_runs = [{"id": 5, "name": "tests", "status": "completed", "conclusion": "failure"}]
    fake.logs[5] = "E   AssertionError: CI-ONLY-FAILURE\n"
    fake.flip_after = 1  # the first ask is red; the next attempt's commit is asked green
    w.cli("work", "--run", f"{sys.executable} {AGENT}", "--wait", "120")
    run = w.status()
    it = w.items(run)["w1"]
    assert (it["state"], it["attempt"]) == ("completed", 2) and (repo / "w1.txt").exists(), json.dumps(run, indent=1)
    assert "CI-ONLY-FAILURE" in w.cli("work", "logs", "w1", "--all").stdout  # the second prompt carried the log
    pushed = git(repo, "ls-remote", "origin", "refs/heads/plugkit/w1").split()
    assert pushed and any(f"/commits/{pushed[0]}/check-runs" in path for path, _ in fake.seen), fake.seen
    trace = w.cli("work", "trace", "w1", "--attempt", "1").stdout
    assert "ci_red" in trace, trace


def test_work_ci_never_runs_a_branchs_own_ci_script_outside_the_sandbox(home, tmp_path):
    from tests.support.work_cli import AGENT, Work, commit_file

    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\nci = "local"\nci_command = ".ci/run"\nwork_ci = true\n')
    marker = tmp_path / "ran-outside"
    w = Work(home, repo, {"w1": [["write", ".ci/run", f"#!/bin/sh\ntouch {marker}\n"], *commit_file("w1.txt")]})
    w.add("w1", "--verify", "test -f w1.txt")
    refused = w.cli("work", "--run", f"{sys.executable} {AGENT}", ok=False)
    assert refused.returncode == 2 and "outside the worker sandbox" in refused.stderr, refused.stderr
    assert "item's verify" in refused.stderr and not marker.exists()
