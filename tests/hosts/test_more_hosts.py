"""plugkit inside the real OpenCode and Kilo (npm `opencode-ai`, `@kilocode/cli`), headless
(`run`) against the scripted fake model, after `plugkit install --platform P` wrote its
relay plugin: exec: runs in the runner, its output (42) is the tool result the next model
request carries, the shell never runs the line, and the session context is in the system
prompt. A host whose package is missing fails, naming the fix.
"""

import pytest

from tests.hosts.hosts import Host, project, run, shell_spy
from tests.hosts.more_hosts import MORE_HOSTS
from tests.hosts.script import Say, Script
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e
SPIED = ("exec:python", "exec:bash", "spy-check")


@pytest.fixture(params=list(MORE_HOSTS))
def host(request) -> Host:
    host = MORE_HOSTS[request.param]
    why = host.missing()
    if why:
        pytest.fail(why)
    return host


def test_exec_is_run_by_the_runner_and_session_context_reaches_the_model(tmp_path, home, host):
    work, host_home = project(tmp_path, host, cli_argv(), home.env)
    marker = tmp_path / "shell-ran"
    shell_spy(host_home, marker, SPIED)
    script = Script([host.shell("exec:python\nprint(6*7)"), host.shell("spy-check"), Say("It ran.")])
    result = run(host, script, work, host_home, env={"PWD": str(work)})
    why = result.explain()
    assert result.proc.returncode == 0, why
    first = script.main[0] if script.main else None
    assert first is not None and "plugkit: to run code" in first.everything, why
    reply = script.reply_to(0)
    assert reply is not None and "42" in reply.newest and "ran as task_" in reply.newest, why
    # spy-check (not intercepted) reached the shell and found the spies first on PATH; exec:python never did.
    assert [line.split()[0].rsplit("/", 1)[-1] for line in marker.read_text().splitlines()] == ["spy-check"], why
    assert script.reply_to(3) is None, why
