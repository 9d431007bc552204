"""Sessions as an agent in a real host lives them (issue 30.1 and 30.3), headless against the
scripted fake model: Claude Code remembers a `cd` between Bash calls and sends the new cwd to
the hooks, and the task its agent started before the `cd` is still its own (found, and killed
at the end); `qwen -p` fires no SessionEnd, and the background task its agent left behind dies
when the host exits, unless it was started with --detach."""

import pytest

from tests.hosts.hosts import HOSTS, installed, project, run
from tests.hosts.script import Say, Script
from tests.support.escapees import escapees, gone, kill_all, unique_seconds
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e


@pytest.fixture
def sleeps():
    """Sleep lengths no other process uses (how the tasks' processes are found); none outlives the test."""
    made: list[str] = []

    def make() -> str:
        made.append(unique_seconds())
        return made[-1]

    yield make
    for seconds in made:
        kill_all(seconds)


def test_claude_code_keeps_its_session_across_a_cd_and_ends_it_from_there(tmp_path, home, sleeps):
    host = installed(HOSTS["claude"])
    work, host_home = project(tmp_path, host, cli_argv(), home.env, {"pkg/README": "a package\n"})
    seconds = sleeps()
    script = Script([host.shell(f"exec:bash --wait 1\nsleep {seconds}"), host.shell("cd pkg && pwd"),
                     host.shell("exec:status task_1"), Say("Done.")])
    result = run(host, script, work, host_home)
    why = result.explain()
    assert result.proc.returncode == 0, why
    started, moved, asked = (script.reply_to(i) for i in range(3))
    assert started is not None and "task_1 is still running" in started.newest, why
    assert moved is not None and f"{work}/pkg" in moved.newest, why
    # Asked from pkg/ (Claude Code sends the remembered cwd): still this session's task.
    assert asked is not None and "task_1" in asked.newest and "no task_1" not in asked.newest, why
    assert "running" in asked.newest, why
    # The host has exited (its SessionEnd came from pkg/): the task's sleep is gone with it.
    assert gone(seconds, within=10), why


def test_qwen_headless_leaves_nothing_running_but_what_it_detached(tmp_path, home, sleeps):
    host = installed(HOSTS["qwen"])
    work, host_home = project(tmp_path, host, cli_argv(), home.env)
    left, kept = sleeps(), sleeps()
    script = Script([host.shell(f"exec:bash --wait 1\nsleep {left}"),
                     host.shell(f"exec:bash --detach --wait 1\nsleep {kept}"), Say("Done.")])
    result = run(host, script, work, host_home)
    why = result.explain()
    assert result.proc.returncode == 0, why
    for turn in (0, 1):
        reply = script.reply_to(turn)
        assert reply is not None and "still running" in reply.newest, why
    # No SessionEnd from `qwen -p`: the runner saw its host exit and ended the session.
    assert gone(left, within=10), why
    assert escapees(kept), why  # started to outlive its session on purpose
