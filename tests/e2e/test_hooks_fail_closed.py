"""Under gates = "enforce", a runner that does not answer (stopped, killed, wedged) does not
switch the gates off: a file write is denied and a Stop turned back once, naming `plugkit
runner restart`; shell calls stay allowed (the restart must be runnable). A workspace that
never opted in keeps failing open. Through the real `plugkit hook`, real daemon, real git."""

import os
import signal

import pytest

from tests.support.agent import Agent, make_repo

pytestmark = pytest.mark.e2e
RESTART = "plugkit runner restart"


def _stopped(home) -> None:
    done = home.cli("runner", "stop")
    assert done.returncode == 0, done.stderr
    assert not home.runner_pids()


def _closed(agent: Agent) -> None:
    decision, reason = agent.write("a.py", "x = 1\n")
    assert decision == "deny" and RESTART in reason and "\n" not in reason, (decision, reason)
    blocked, why = agent.stop()
    assert blocked and RESTART in why, why
    assert agent.stop(active=True) == (False, "")  # never a loop
    assert agent.bash(RESTART) == ("allow", "")  # the way out stays open


def test_a_sed_to_off_and_a_killed_runner_still_fail_closed(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "enforce"\n')
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")  # starts the runner
    assert agent.write("a.py", "x = 1\n")[0] == "deny"  # PLAN: the gates hold, and the runner pins it
    config = repo / ".plugkit" / "config.toml"
    config.write_text(config.read_text().replace("enforce", "off"))
    for pid in home.runner_pids():
        os.kill(pid, signal.SIGKILL)
    home.stop_all()
    _closed(agent)
    assert not (repo / "a.py").exists()


def test_a_configured_enforce_fails_closed_before_any_runner_saw_it(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "enforce"\n')
    sub = repo / "src"
    sub.mkdir()
    _closed(Agent(home, repo))
    _closed(Agent(home, sub))  # below the root too


def test_a_wedged_runner_fails_closed_under_enforce(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "enforce"\n')
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    [pid] = home.runner_pids()
    os.kill(pid, signal.SIGSTOP)
    try:
        decision, reason = agent.write("a.py", "x = 1\n")
        assert decision == "deny" and RESTART in reason, reason
    finally:
        os.kill(pid, signal.SIGCONT)
    _stopped(home)


@pytest.mark.parametrize("config", [None, 'gates = "advisory"\n', 'gates = "off"\n'])
def test_a_workspace_that_never_enforced_keeps_failing_open(home, tmp_path, config):
    repo = tmp_path / "repo"
    if config is None:
        repo.mkdir()
    else:
        make_repo(repo, config)
    agent = Agent(home, repo)
    assert agent.write("a.py", "x = 1\n") == ("allow", "")
    assert agent.stop() == (False, "")
