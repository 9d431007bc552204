"""A `cd` keeps the session (issue 30.1): a session is (session id, workspace root), so an agent
that moves into `pkg/` still finds, lists and (at its end) kills the task it started at the
project's root, while two agents (two ids) in one directory stay apart. Tasks still run where
they were started. Through the real CLI and the real hook command against a real runner."""

import json
import subprocess

import pytest

from tests.support.procs import alive
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / "pkg" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def start(home, cwd, session: str | None, code: str = "sleep 120") -> int:
    env = {"PLUGKIT_SESSION": session} if session else {}
    done = home.cli("exec:bash", "--wait", "0", "--json", code, cwd=str(cwd), env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["task"]["task_id"]


def status(home, cwd, session: str | None, tid: int) -> subprocess.CompletedProcess:
    env = {"PLUGKIT_SESSION": session} if session else {}
    return home.cli("exec:status", f"task_{tid}", "--json", cwd=str(cwd), env=env)


def state(home, cwd, session, tid) -> dict:
    done = status(home, cwd, session, tid)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["task"]


def session_end_hook(home, session: str, cwd) -> dict:
    done = subprocess.run(cli_argv() + ["hook", "SessionEnd", "--platform", "claude-code"],
                          input=json.dumps({"session_id": session, "cwd": str(cwd),
                                            "hook_event_name": "SessionEnd"}).encode(),
                          capture_output=True, env=home.env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("session", ["agent-1", None], ids=["PLUGKIT_SESSION", "default session"])
def test_after_cd_pkg_the_task_is_found_and_listed(home, project, session):
    tid = start(home, project, session)
    assert state(home, project / "pkg" / "deep", session, tid)["state"] == "running"
    env = {"PLUGKIT_SESSION": session} if session else {}
    listed = home.cli("exec:tasks", cwd=str(project / "pkg"), env=env)
    assert f"task_{tid}" in listed.stdout, listed.stdout + listed.stderr
    home.cli("exec:close", f"task_{tid}", cwd=str(project / "pkg"), env=env)


def test_session_end_from_pkg_kills_what_the_agent_started_at_the_root(shared_home, project):
    tid = start(shared_home, project, "agent-1")
    pid = state(shared_home, project, "agent-1", tid)["pid"]
    session_end_hook(shared_home, "agent-1", project / "pkg")
    assert not alive(pid)  # gone or a zombie (a pid_exists then a status() raced its reaping)
    # Ended and forgotten, as a session end does: no longer this session's.
    assert status(shared_home, project, "agent-1", tid).returncode != 0


def test_session_cleanup_from_pkg_kills_it_too(shared_home, project):
    tid = start(shared_home, project, "agent-1")
    done = shared_home.cli("session-cleanup", "--json", cwd=str(project / "pkg"), env={"PLUGKIT_SESSION": "agent-1"})
    assert json.loads(done.stdout)["killed"] == [tid], done.stdout + done.stderr


def test_two_agents_in_one_directory_stay_apart(shared_home, project):
    mine = start(shared_home, project / "pkg", "agent-1")
    assert status(shared_home, project / "pkg", "agent-2", mine).returncode != 0
    assert "no tasks" in shared_home.cli("exec:tasks", cwd=str(project), env={"PLUGKIT_SESSION": "agent-2"}).stdout
    session_end_hook(shared_home, "agent-2", project / "pkg")  # the other agent ends: mine lives on
    assert state(shared_home, project, "agent-1", mine)["state"] == "running"
    shared_home.cli("exec:close", f"task_{mine}", cwd=str(project), env={"PLUGKIT_SESSION": "agent-1"})


def test_a_task_runs_in_the_directory_it_was_started_from(shared_home, project):
    done = shared_home.cli("exec:bash", "pwd", cwd=str(project / "pkg"), env={"PLUGKIT_SESSION": "agent-1"})
    assert done.stdout.strip() == str((project / "pkg").resolve()), done.stderr
    tid = start(shared_home, project / "pkg", "agent-1", "true")
    assert state(shared_home, project, "agent-1", tid)["cwd"] == str((project / "pkg").resolve())


def test_without_a_workspace_each_directory_is_its_own_session(home, tmp_path):
    (tmp_path / "plain" / "sub").mkdir(parents=True)
    tid = start(home, tmp_path / "plain", "agent-1", "true")
    assert status(home, tmp_path / "plain" / "sub", "agent-1", tid).returncode != 0
    assert state(home, tmp_path / "plain", "agent-1", tid)["state"] in ("running", "completed")


def test_after_a_restart_a_task_started_in_pkg_is_found_from_the_root(home, project):
    # The ledger keeps the cwd a task ran in (before this change, its session's cwd: the same
    # path) and finds its session's root from it, so records under the old key are found too.
    tid = start(home, project / "pkg", "agent-1", "echo kept")
    assert home.cli("exec:sleep", f"task_{tid}", "10", cwd=str(project / "pkg"),
                    env={"PLUGKIT_SESSION": "agent-1"}).returncode == 0
    assert home.cli("runner", "stop").returncode == 0
    assert home.cli("runner", "start").returncode == 0
    found = state(home, project, "agent-1", tid)
    assert found["state"] == "completed" and found["cwd"] == str((project / "pkg").resolve())
