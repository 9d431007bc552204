"""The one agent-host table (plugkit.hosts): every host `plugkit install` supports has a row,
and each is recognised however it runs (native binary, node script, a launcher's child)."""

import pytest

from client.hooks.install import TARGETS
from client.hooks.install_hosts import DETECT
from plugkit.hosts import BY_PLATFORM, host_of, marked_by


def test_every_installable_host_is_in_the_table_the_runner_reads():
    assert set(BY_PLATFORM) == set(TARGETS) == set(DETECT)


@pytest.mark.parametrize("comm, argv, platform", [
    ("claude.exe", ("/n/@anthropic-ai/claude-code/bin/claude.exe", "-p"), "claude-code"),
    ("node", ("node", "/n/@qwen-code/qwen-code/cli.js"), "qwen"),
    ("node", ("node", "/usr/local/bin/gemini"), "gemini"),
    ("codex", ("/n/@openai/codex-linux-x64/vendor/codex", "exec"), "codex"),
    ("cursor-agent", ("cursor-agent",), "cursor"),
    ("copilot-linux-x", ("/n/@github/copilot-linux-x64/copilot",), "copilot"),
    ("opencode.exe", ("/n/opencode-ai/bin/opencode.exe",), "opencode"),
    ("kilo", ("/n/@kilocode/cli-linux-x64/bin/kilo", "run"), "kilo"),
])
def test_each_host_is_recognised_as_it_runs(comm, argv, platform):
    host = host_of(comm, argv)
    assert host is not None and host.platform == platform


def test_a_shell_or_an_editor_is_no_host():
    assert host_of("bash", ("bash", "-c", "claude-notes.sh")) is None
    assert host_of("vim", ("vim", "kilo.txt")) is None


def test_a_hosts_shell_is_known_by_the_environment_it_was_given():
    assert marked_by({"CLAUDECODE": "1"})[0].platform == "claude-code"
    assert marked_by({"OPENCODE": "1", "KILO": "1"})[0].platform == "kilo"  # Kilo sets both
    assert marked_by({"HOME": "/root", "CLAUDECODE": ""}) is None
