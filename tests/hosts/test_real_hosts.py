"""plugkit's hooks inside the real agent hosts (Claude Code, Qwen Code, Gemini CLI, Codex
CLI), each run headless against the scripted fake model, in a scratch git repo after
`plugkit install --platform P`. What the model receives is what the host sent back.

Each host runs three times: once for exec: interception and SessionStart context, once
under enforced gates (a write refused, a Stop turned back once and then let through),
once with the runner unreachable (fail-open). A host whose package is missing fails.
"""

import json
import subprocess

import pytest

from tests.hosts.hosts import HOSTS, Host, cache_dir, run, shell_spy
from tests.hosts.script import Say, Script
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e
SPIED = ("exec:python", "exec:bash", "exec:status")


@pytest.fixture(params=list(HOSTS))
def host(request) -> Host:
    host = HOSTS[request.param]
    why = host.missing()
    if why:
        pytest.fail(why)
    return host


def git(work, *args: str) -> None:
    subprocess.run(["git", *args], cwd=work, check=True, capture_output=True)


def project(tmp_path, home, host: Host, files: dict | None = None):
    """A scratch git repo with plugkit installed for the host, all committed; and the
    host's scratch HOME. Returns (work, host_home)."""
    work, host_home = tmp_path / "work", tmp_path / "host-home"
    work.mkdir()
    host_home.mkdir()
    git(work, "init", "-q", "-b", "main")
    git(work, "config", "user.email", "e2e@example.invalid")
    git(work, "config", "user.name", "e2e tester")
    for rel, text in (files or {}).items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    installed = subprocess.run(cli_argv() + ["install", "--platform", host.platform], cwd=work, env=home.env,
                               capture_output=True, text=True, timeout=60)
    assert installed.returncode == 0, installed.stderr
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "start")
    return work, host_home


def test_exec_is_run_by_the_runner_and_session_context_reaches_the_model(tmp_path, home, host):
    work, host_home = project(tmp_path, home, host)
    marker = tmp_path / "shell-ran"
    shell_spy(host_home, marker, SPIED)
    script = Script([host.shell("exec:python\nprint(6*7)"), host.shell("exec:python print(6*7)"),
                     Say("Both forms ran.")])
    result = run(host, script, work, host_home)
    why = result.explain()
    assert result.proc.returncode == 0, why
    first = script.main[0] if script.main else None
    assert first is not None and "plugkit: to run code" in first.everything, why
    for turn in (0, 1):
        reply = script.reply_to(turn)
        assert reply is not None, why
        assert "42" in reply.newest and "ran as task_" in reply.newest, why
    # The shell would have found the spies first on PATH: nothing ran them.
    assert not marker.exists(), marker.read_text()
    assert script.reply_to(2) is None, why


def test_enforced_gates_refuse_a_write_and_turn_back_one_stop(tmp_path, home, host):
    prd = [{"id": "ship-feature", "subject": "ship the feature"}]
    work, host_home = project(tmp_path, home, host, {".plugkit/config.toml": 'gates = "enforce"\n',
                                                     ".prd": json.dumps(prd)})
    script = Script([host.write(str(work / "a.py"), "x = 1\n"), Say("Finished."), Say("Finished, really.")])
    result = run(host, script, work, host_home)
    why = result.explain()
    assert result.proc.returncode == 0, why
    refused = script.reply_to(0)
    assert refused is not None and "PLAN" in refused.newest and "EMIT" in refused.newest, why
    assert not (work / "a.py").exists(), why
    # The Stop gate turned the first "Finished." back with its reason...
    turned_back = script.reply_to(1)
    assert turned_back is not None, why
    assert "not done yet" in turned_back.newest and "ship-feature" in turned_back.newest, why
    # ...and let the second through (stop_hook_active): no further request, no loop.
    assert script.reply_to(2) is None, why


def test_runner_unreachable_the_host_keeps_working_with_at_most_one_line(tmp_path, home, host):
    work, host_home = project(tmp_path, home, host)
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
