"""A verify runs in its caller's environment (issue 30.2), not the runner's: `plugkit work`'s in
that of whoever started the run, scoped as its worker was (issue 40.10: the check runs the
worker's code, so it holds the worker's credential scopes, a variable only when the workspace
grants it), `plugkit prd verify`'s (and `gate verify`'s) in its caller's. A person's activated
venv and exported variables are what their check needs (a verify under plugkit's own
interpreter crashed on its pytest plugins). The runner is started first, from an environment
without the variable, so only the caller can bring it."""

import sys

import pytest

from tests.support.work_cli import AGENT, Work, commit_file
from tests.support.agent import git, make_repo

pytestmark = pytest.mark.e2e


def test_the_verify_sees_the_environment_the_run_was_started_in(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    assert home.cli("runner", "start").returncode == 0
    w = Work(home, repo, {"v1": commit_file("v1.txt")})
    config = repo / ".plugkit" / "config.toml"
    config.write_text(config.read_text().replace("work_credentials = [", 'work_credentials = ["PROJECT_CHECK_VAR", '))
    git(repo, "commit", "-qam", "grant the check its variable")
    w.add("v1", "--verify", 'test "$PROJECT_CHECK_VAR" = from-the-person && test -z "$NOT_GRANTED" && test -f v1.txt')
    w.env.update(PROJECT_CHECK_VAR="from-the-person", NOT_GRANTED="a secret")
    w.cli("work", "--run", f"{sys.executable} {AGENT}", "--json", "--afk")
    run = w.settled()
    assert w.items(run)["v1"]["verify"] == "green" and run["state"] == "done", run


def test_prd_verify_runs_the_check_in_the_callers_environment(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    assert home.cli("runner", "start").returncode == 0
    env = {"PROJECT_CHECK_VAR": "from-the-person"}
    assert home.cli("prd", "add", "make v1", "--id", "v1", "--verify", 'test "$PROJECT_CHECK_VAR" = from-the-person',
                    cwd=repo, env=env).returncode == 0
    done = home.cli("prd", "verify", "v1", "--json", cwd=repo, env=env)
    assert done.returncode == 0 and '"green"' in done.stdout, done.stdout + done.stderr
