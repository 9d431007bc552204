"""Issue 42's majors 2 and 4 as an agent in a real host lives them (Claude Code, Qwen Code),
headless against the scripted fake model: `exec:sleep --until` finds text the agent was
already shown, and `mutable resolve NAME last` / `evidence add --task last` reach the task
its exec: call ran, from the agent's own shell (Qwen Code sets no PLUGKIT_SESSION there: the
runner finds the session through the host both calls come from). One session per host plays
both (tests/hosts/sessions.py); each is its own test of it."""

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hosts.hosts import HOSTS, Run, installed, project, run
from tests.hosts.script import Say, Script
from tests.hosts.sessions import once_each
from tests.support.escapees import kill_all, unique_seconds
from tests.support.runner_home import Home, cli_argv, free_port

pytestmark = pytest.mark.e2e
NAMES = ["claude", "qwen"]


@dataclass
class Session:
    script: Script
    result: Run


def _play(base: Path, name: str) -> Session:
    """A server-like task and a wait for its banner, then a task whose answer resolves a mutable
    and is recorded as evidence, both by `last` from the agent's shell."""
    host = installed(HOSTS[name])
    plugkit = cli_argv()[0]
    runner = Home(path=base / "plugkit-home", port=free_port())
    seconds = unique_seconds()
    try:
        work, host_home = project(base, host, cli_argv(), runner.env,
                                  steps=(("mutable", "add", "db_port", "--expected", "5432"),))
        script = Script([host.shell(f"exec:bash --wait 3\necho Serving HTTP; sleep {seconds}"),
                         host.shell("exec:sleep task_1 30 --until Serving"),
                         host.shell("exec:bash\necho 5432"), host.shell(f"{plugkit} mutable resolve db_port last"),
                         host.shell(f"{plugkit} evidence add --task last"), Say("Done.")])
        env = {"PLUGKIT_HOME": str(runner.path), "PLUGKIT_PORT": str(runner.port)}
        return Session(script, run(host, script, work, host_home, env=env))  # Qwen Code takes ~20 s a turn here
    finally:
        kill_all(seconds)
        runner.stop_all()  # the host's hooks started it; no test may leave it running


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """host -> its one session (tests/hosts/sessions.py)."""
    return once_each(tmp_path_factory, _play)


@pytest.mark.parametrize("name", NAMES)
def test_until_finds_what_the_agent_was_already_shown(sessions, name):
    played = sessions(name)
    script, why = played.script, played.result.explain()
    assert played.result.proc.returncode == 0, why
    started, waited = script.reply_to(0), script.reply_to(1)
    assert started is not None and "Serving HTTP" in started.newest, why
    assert waited is not None and "saw 'Serving' at byte 0 (already read by this session)" in waited.newest, why
    assert "not seen" not in waited.newest, why


@pytest.mark.parametrize("name", NAMES)
def test_last_reaches_the_task_the_agent_just_ran(sessions, name):
    played = sessions(name)
    script, why = played.script, played.result.explain()
    assert played.result.proc.returncode == 0, why
    ran, resolved, recorded = (script.reply_to(i) for i in range(2, 5))
    # task_2: the session's newest task, with task_1 (the server of the first test) still running
    assert ran is not None and "ran as task_2 " in ran.newest, why
    assert resolved is not None and "last = task_2" in resolved.newest, why
    assert "db_port" in resolved.newest and "5432" in resolved.newest, why
    assert recorded is not None and "last = task_2" in recorded.newest and "has none" not in recorded.newest, why
