"""A session's leftovers die with its host (issue 30.3, the hosts that have a session-end event):
the agent leaves a task running in the background (`exec:bash --wait 0 sleep ...`, caught by the
hook and started by the runner), the host exits, its session-end hook fires (installed by
`plugkit install`), and the runner kills the task. On main, Codex 0.169's SessionEnd was never
registered and the sleep outlived the host.

Qwen Code's `qwen -p` fires no session end at all (its SessionEnd is fired by the interactive UI
and ACP mode only): tying a session to the host process is another item's work, not tested here.
"""

import os
import signal
import time

import pytest

from tests.hosts.hosts import HOSTS, installed, project, run
from tests.hosts.more_hosts import MORE_HOSTS
from tests.hosts.script import Say, Script
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e
# The hosts whose headless run fires a session end on exit.
ENDING = ("codex", "claude", "gemini", "copilot")


def sleepers(marker: str) -> list[int]:
    """Pids of the `sleep <marker>` processes alive now."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    argv = fh.read().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", marker.encode()]:
                found.append(int(entry))
    return found


@pytest.mark.parametrize("name", ENDING)
def test_a_task_the_agent_left_running_is_killed_when_the_host_exits(tmp_path, home, name):
    host = installed({**HOSTS, **MORE_HOSTS}[name])
    work, host_home = project(tmp_path, host, cli_argv(), home.env)
    marker = f"{117 + len(name)}.{os.getpid() % 1000:03d}"  # a duration no other sleep has
    script = Script([host.shell(f"exec:bash --wait 0 sleep {marker}"), Say("Left it running.")])
    try:
        result = run(host, script, work, host_home, env={"PWD": str(work)})
        why = result.explain()
        started = script.reply_to(0)
        assert started is not None and "task_" in started.newest, why
        deadline = time.monotonic() + 20  # the hook's RPC returns before the kill's grace ends
        while sleepers(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sleepers(marker) == [], f"the task outlived {name}'s exit\n{why}"
    finally:
        for pid in sleepers(marker):
            os.kill(pid, signal.SIGKILL)
