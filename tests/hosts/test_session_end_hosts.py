"""A session's leftovers die with its host (issue 30.3, the hosts that have a session-end event):
the agent leaves a task running in the background (`exec:bash --wait 0 sleep ...`, caught by the
hook and started by the runner), the host exits, its session-end hook fires (installed by
`plugkit install`), and the runner kills the task. On main, Codex 0.169's SessionEnd was never
registered and the sleep outlived the host.

Claude Code, Gemini CLI and Codex CLI show it in their exec session of test_real_hosts.py (a host
start each fewer); Copilot CLI here. Qwen Code's `qwen -p` fires no session end at all (its
SessionEnd is fired by the interactive UI and ACP mode only): tying a session to the host process
is another item's work, not tested here.
"""

import pytest

from tests.hosts.hosts import installed, project, run
from tests.hosts.leftovers import kill_sleepers, marker_for, outlived
from tests.hosts.more_hosts import MORE_HOSTS
from tests.hosts.script import Say, Script
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e


def test_a_task_the_agent_left_running_is_killed_when_copilot_exits(tmp_path, home):
    host = installed(MORE_HOSTS["copilot"])
    work, host_home = project(tmp_path, host, cli_argv(), home.env)
    marker = marker_for(host.name)
    script = Script([host.shell(f"exec:bash --wait 0 sleep {marker}"), Say("Left it running.")])
    try:
        result = run(host, script, work, host_home, env={"PWD": str(work)})
        why = result.explain()
        started = script.reply_to(0)
        assert started is not None and "task_" in started.newest, why
        assert outlived(marker) == [], f"the task outlived copilot's exit\n{why}"
    finally:
        kill_sleepers(marker)
