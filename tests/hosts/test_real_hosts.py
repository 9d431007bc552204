"""plugkit's hooks inside the real agent hosts (Claude Code, Qwen Code, Gemini CLI, Codex
CLI), each run headless against the scripted fake model, in a scratch git repo after
`plugkit install --platform P`. What the model receives is what the host sent back.

Each host runs twice: once for exec: interception and SessionStart context (and, for the hosts
whose headless run fires a session end, a task the agent left running killed when the host exits:
issue 30.3, Copilot CLI's in test_session_end_hosts.py), once with the runner unreachable (fail-open). Under enforced gates (a write refused, a Stop turned back once
and then let through, every hook field plugkit reads arriving from the host) each plays the one
session of tests/hosts/test_write_tools.py. A host whose package is missing fails.
"""

import pytest

from tests.hosts.hosts import HOSTS, Host, cache_dir, installed, project, run, shell_spy
from tests.hosts.leftovers import kill_sleepers, marker_for, outlived
from tests.hosts.script import Say, Script
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e
SPIED = ("exec:python", "exec:bash", "exec:status", "spy-check")
# The hosts whose headless run fires a session end on exit (Qwen Code's `qwen -p` fires none).
ENDING = ("claude", "gemini", "codex")


@pytest.fixture(params=list(HOSTS))
def host(request) -> Host:
    return installed(HOSTS[request.param])


def scratch(tmp_path, home, host: Host, files: dict | None = None, steps: tuple = ()):
    return project(tmp_path, host, cli_argv(), home.env, files, steps)


def test_exec_is_run_by_the_runner_and_session_context_reaches_the_model(tmp_path, home, host):
    work, host_home = scratch(tmp_path, home, host)
    marker = tmp_path / "shell-ran"
    shell_spy(host_home, marker, SPIED)
    duration = marker_for(host.name)  # the left task's `sleep`, found by it
    left = [host.shell(f"exec:bash --wait 0 sleep {duration}")] if host.name in ENDING else []
    script = Script([host.shell("exec:python\nprint(6*7)"), host.shell("exec:python print(6*7)"),
                     host.shell("spy-check"), *left, Say("Both forms ran.")])
    try:
        result = run(host, script, work, host_home)
        why = result.explain()
        if left:  # the session end killed what the agent left running
            started = script.reply_to(3)
            assert started is not None and "task_" in started.newest, why
            assert outlived(duration) == [], f"the task outlived {host.name}'s exit\n{why}"
    finally:
        kill_sleepers(duration)
    assert result.proc.returncode == 0, why
    first = script.main[0] if script.main else None
    assert first is not None and "plugkit: to run code" in first.everything, why
    for turn in (0, 1):
        reply = script.reply_to(turn)
        assert reply is not None, why
        assert "42" in reply.newest and "ran as task_" in reply.newest, why
    # The shell finds the spies first on PATH (spy-check, not intercepted, ran one), and
    # no exec: line reached it.
    assert [line.split()[0].rsplit("/", 1)[-1] for line in marker.read_text().splitlines()] == ["spy-check"], why
    assert script.reply_to(len(script.turns) - 1) is None, why


def test_runner_unreachable_the_host_keeps_working_with_at_most_one_line(tmp_path, home, host):
    work, host_home = scratch(tmp_path, home, host)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the runner's home would have to be created")
    script = Script([host.shell("echo ok > side.txt"), Say("All done.")])
    result = run(host, script, work, host_home, env={"PLUGKIT_HOME": str(blocker / "home")})
    why = result.explain()
    assert result.proc.returncode == 0, why
    assert (work / "side.txt").read_text() == "ok\n", why
    assert script.reply_to(0) is not None, why
    # The hosts' own prompts may name their install directory (plugkit-hosts): not ours to count.
    cache = str(cache_dir())
    lines = {line for seen in script.main for line in seen.everything.replace(cache, "").splitlines()
             if "plugkit" in line}
    assert len(lines) <= 1, lines
