"""The worker sandbox with a hostile command worker (tests/fixtures/sandbox_attacks.py), the
real runner, real bwrap and real git: everything it tries outside its worktree is denied or
ended, its work still lands, and the item's logs say what was tried."""

import json
import os
import sys
from pathlib import Path

import pytest

from tests.support.work_cli import AGENT, Work, commit_file
from tests.support.agent import git, make_repo
from tests.support.attempts import home_with_a_key
from tests.support.escapees import gone, kill_all, unique_seconds

pytestmark = pytest.mark.e2e
ATTACKS = str(Path(__file__).resolve().parents[1] / "fixtures" / "sandbox_attacks.py")
EXPECTED = ("py_read_gates_key", "sh_read_ledger", "py_read_ssh_key", "sh_read_ssh_key", "py_write_outside",
            "sh_write_outside", "py_write_home", "py_write_main_checkout", "sh_delete_main_checkout",
            "py_move_main_ref", "sh_move_main_ref", "sh_signal_the_runner")


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "repo", 'gates = "advisory"\n')


@pytest.fixture
def user_home(tmp_path) -> Path:
    """The worker's $HOME, holding a credential the sandbox must hide."""
    return home_with_a_key(tmp_path / "user")


def test_a_hostile_worker_is_confined_to_its_worktree(home, repo, user_home, tmp_path):
    seconds = unique_seconds()
    w = Work(home, repo, {})
    w.env["HOME"] = str(user_home)
    w.add("w1", "--verify", "test -f done.txt")
    main_before = git(repo, "rev-parse", "main").strip()
    try:
        runner_pid = home.discovery()["pid"]
        run = json.loads(w.cli("work", "--run", f"{sys.executable} {ATTACKS} {repo} {seconds} {runner_pid}",
                               "--json").stdout)["run"]
        run = w.until(lambda r: r["ended_at"] is not None)
        it = w.items(run)["w1"]
        logs = w.cli("work", "logs", "w1").stdout
        results = dict(line.split()[1:3] for line in logs.splitlines() if line.startswith("ATTACK "))
        assert set(results) == set(EXPECTED), logs
        assert all(v == "denied" for v in results.values()), logs
        assert (it["state"], it["reason"]) == ("completed", "landed"), run
        assert (repo / "README").read_text() == "a workspace\n" and (repo / ".plugkit" / "config.toml").exists()
        assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "outside-sh.txt").exists()
        assert not (user_home / ".bashrc").exists()
        assert git(repo, "rev-parse", "main~1").strip() == main_before  # moved by the landing only
        assert gone(seconds), "the worker's setsid sleep outlived it"
    finally:
        kill_all(seconds)


@pytest.fixture
def path_without_bwrap(tmp_path) -> str:
    """A PATH holding every program of this one but bwrap: a machine without bubblewrap."""
    farm = tmp_path / "bin"
    farm.mkdir()
    for d in reversed(os.environ["PATH"].split(os.pathsep)):
        if os.path.isdir(d):
            for name in os.listdir(d):
                if name != "bwrap":
                    link = farm / name
                    if link.is_symlink():
                        link.unlink()
                    link.symlink_to(os.path.join(d, name))
    return str(farm)


def test_without_bwrap_no_worker_starts_unless_a_person_says_so(home, repo, path_without_bwrap):
    w = Work(home, repo, {"w1": commit_file("w1.txt")})
    w.env["PATH"] = path_without_bwrap  # the runner this first command starts has no bwrap either
    w.add("w1", "--verify", "test -f w1.txt")
    refused = w.cli("work", "--run", f"{sys.executable} {AGENT}", ok=False)
    assert refused.returncode != 0, refused.stdout
    line = refused.stderr.strip()
    assert "bwrap is not installed" in line and "plugkit work --no-sandbox" in line and "\n" not in line, line
    assert not (repo / ".plugkit" / "worktrees" / "w1").exists()
    w.cli("work", "--run", f"{sys.executable} {AGENT}", "--no-sandbox")
    run = w.until(lambda r: r["ended_at"] is not None)
    assert run["sandbox"] is False and w.items(run)["w1"]["state"] == "completed", run
    assert "NO SANDBOX (--no-sandbox)" in w.cli("work", "status").stdout


def test_doctor_reports_the_sandbox_and_its_self_test(home):
    done = home.cli("doctor")
    row = next(line for line in done.stdout.splitlines() if "worker sandbox" in line)
    assert row.startswith("ok") and "self-test passed" in row, done.stdout


def test_a_worker_holds_only_its_scopes_and_status_names_them(home, repo):
    w = Work(home, repo, {"w1": [["shell", "env > seen-env.txt"], *commit_file("w1.txt")]})
    w.env.update(AWS_SECRET_ACCESS_KEY="prod-secret", DATABASE_URL="postgres://prod", ANTHROPIC_API_KEY="k")
    w.add("w1", "--verify", "test -f w1.txt")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    assert w.items(run)["w1"]["state"] == "completed", run
    seen = dict(line.split("=", 1) for line in (repo / "seen-env.txt").read_text().splitlines() if "=" in line)
    assert "AWS_SECRET_ACCESS_KEY" not in seen and "DATABASE_URL" not in seen, seen
    assert "ANTHROPIC_API_KEY" not in seen  # the command worker's row reaches no model
    assert seen["PLUGKIT_E2E_WORK_PLAN"] == str(w.plan_file) and "PATH" in seen  # granted, base
    line = next(x for x in w.cli("work", "status").stdout.splitlines() if "credentials:" in x)
    assert "granted (PLUGKIT_E2E_WORK_DIR, PLUGKIT_E2E_WORK_PLAN)" in line and "scrubbed:" in line, line
    assert "prod-secret" not in json.dumps(run)
