"""Issue 42's majors 2 and 4 as an agent in a real host lives them (Claude Code, Qwen Code),
headless against the scripted fake model: `exec:sleep --until` finds text the agent was
already shown, and `mutable resolve NAME last` / `evidence add --task last` reach the task
its exec: call ran, from the agent's own shell (Qwen Code sets no PLUGKIT_SESSION there: the
runner finds the session through the host both calls come from)."""

import pytest

from tests.hosts.hosts import HOSTS, installed, project, run
from tests.hosts.script import Say, Script
from tests.support.escapees import kill_all, unique_seconds
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e
NAMES = ["claude", "qwen"]


@pytest.mark.parametrize("name", NAMES)
def test_until_finds_what_the_agent_was_already_shown(tmp_path, home, name):
    host = installed(HOSTS[name])
    work, host_home = project(tmp_path, host, cli_argv(), home.env)
    seconds = unique_seconds()
    try:
        script = Script([host.shell(f"exec:bash --wait 3\necho Serving HTTP; sleep {seconds}"),
                         host.shell("exec:sleep task_1 30 --until Serving"), Say("Done.")])
        result = run(host, script, work, host_home)  # Qwen Code takes ~20 s a turn here
    finally:
        kill_all(seconds)
    why = result.explain()
    assert result.proc.returncode == 0, why
    started, waited = script.reply_to(0), script.reply_to(1)
    assert started is not None and "Serving HTTP" in started.newest, why
    assert waited is not None and "saw 'Serving' at byte 0 (already read by this session)" in waited.newest, why
    assert "not seen" not in waited.newest, why


@pytest.mark.parametrize("name", NAMES)
def test_last_reaches_the_task_the_agent_just_ran(tmp_path, home, name):
    host = installed(HOSTS[name])
    plugkit = cli_argv()[0]
    work, host_home = project(tmp_path, host, cli_argv(), home.env,
                              steps=(("mutable", "add", "db_port", "--expected", "5432"),))
    script = Script([host.shell("exec:bash\necho 5432"), host.shell(f"{plugkit} mutable resolve db_port last"),
                     host.shell(f"{plugkit} evidence add --task last"), Say("Done.")])
    result = run(host, script, work, host_home)
    why = result.explain()
    assert result.proc.returncode == 0, why
    ran, resolved, recorded = (script.reply_to(i) for i in range(3))
    assert ran is not None and "ran as task_1 " in ran.newest, why
    assert resolved is not None and "last = task_1" in resolved.newest, why
    assert "db_port" in resolved.newest and "5432" in resolved.newest, why
    assert recorded is not None and "last = task_1" in recorded.newest and "has none" not in recorded.newest, why
