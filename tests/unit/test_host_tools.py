"""The hosts' tool facts (the `tools` of each row of plugkit/hosts.py, read through
plugkit/host_tools.py) as every reader uses them: the runner's policy denies each host's write
tools before EMIT and reads each shell tool's command; the install matchers send every gated
tool to the hook; the adapters' renames land on gated names. (That the rows know every tool the
installed hosts register: tests/hosts/test_host_tools.py.)"""

import pytest

from client.hooks import copilot, cursor, events, install, opencode
from plugkit import host_tools
from plugkit.host_tools import SHELL, WRITE, names
from plugkit.hosts import BY_PLATFORM
from plugkit.lifecycle import hook_policy as policy

HOSTS = sorted(BY_PLATFORM)
EVERY_WRITE = sorted({(host, name) for host in HOSTS for name in names(host, WRITE)})


@pytest.mark.parametrize("host, tool", EVERY_WRITE)
def test_every_write_tool_of_every_host_is_denied_before_emit(host, tool):
    view = policy.view("PLAN", [], tool, {"file_path": "a.py", "filePath": "a.py", "path": "a.py"})
    assert policy.decide(view).decision == "deny", (host, tool)


def test_qwen_edit_is_a_write_tool():
    # The attack of issue 28.7: Qwen Code's `edit` changed a committed file in PLAN.
    assert policy.decide(policy.view("PLAN", [], "edit", {"file_path": "a.py"})).decision == "deny"


@pytest.mark.parametrize("host", HOSTS)
def test_every_shell_tool_reads_its_command_line(host):
    for tool, key in BY_PLATFORM[host].tools.shell.items():
        view = policy.view("EMIT", ["db"], tool, {key: "git commit -m x"})
        assert policy.decide(view).decision == "deny", (host, tool)
        assert events.SHELL_TOOLS[tool] == key


def test_a_name_means_the_same_on_every_host():
    """One policy reads every host's names: a name that writes on one host and is harmless on
    another would be denied or let through wrongly somewhere."""
    roles: dict[str, set] = {}
    for host in HOSTS:
        for role in (WRITE, SHELL, "other"):
            for name in names(host, role):
                roles.setdefault(name, set()).add(role)
    assert {n: r for n, r in roles.items() if len(r) > 1} == {}
    keys: dict[str, set] = {}
    for host in BY_PLATFORM.values():
        for name, key in host.tools.shell.items():
            keys.setdefault(name, set()).add(key)
    assert {n: k for n, k in keys.items() if len(k) > 1} == {}


@pytest.mark.parametrize("platform", ["claude-code", "qwen", "gemini", "codex"])
def test_install_matchers_send_every_gated_tool_to_the_hook(platform):
    pre = next(m for e, m, _ in install.TARGETS[platform].events if e in ("PreToolUse", "BeforeTool"))
    gated = names(platform, WRITE, hooked=True) | names(platform, SHELL, hooked=True)
    assert set(pre.split("|")) == gated


def test_cursor_matcher_holds_its_write_tools_and_shells_come_by_their_own_event():
    pre = next(m for e, m, _ in install.TARGETS["cursor"].events if e == "preToolUse")
    assert set(pre.split("|")) == names("cursor", WRITE)
    assert any(e == "beforeShellExecution" for e, _, _ in install.TARGETS["cursor"].events)


@pytest.mark.parametrize("adapter, host", [(copilot, "copilot"), (opencode, "opencode"), (opencode, "kilo"),
                                           (cursor, "cursor")])
def test_adapter_renames_keep_a_tools_role(adapter, host):
    for name, (renamed, _) in adapter.TOOLS.items():
        if name in names(host, WRITE):
            assert renamed in host_tools.WRITE_TOOLS, name
        elif name in names(host, SHELL):
            assert renamed in host_tools.SHELL_TOOLS, name
