"""Cursor, Copilot CLI, OpenCode and Kilo: golden tests from the hosts' documented payloads
(tests/fixtures/hooks/<platform>/; Cursor's only source, having no CLI that installs here),
the exact answers, and `plugkit install` for each (merge, --user, --print, --uninstall, auto)
through the real command."""

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from client.hooks import core
from client.hooks.events import NOOP, Answer, is_exec, parse_event, shell_command
from client.hooks.install import is_ours
from tests.support.runner_home import ROOT, cli_argv

FIXTURES = ROOT / "tests" / "fixtures" / "hooks"
CURSOR_SID = "c7d1a0e2-5b4f-4e61-9c3a-2f8e1d0b6a55"
COPILOT_SID = "9a0b8c7d-1e2f-4a3b-8c4d-5e6f7a8b9c0d"
OPENCODE_SID = "ses_5f2a9c1e0ffeXk3Jq8Wm2Zt7Pa"
CWD = "/home/dev/project"
PLATFORMS = ("cursor", "copilot", "opencode")


def event_of(platform: str, name: str, event_name: str):
    data = json.loads((FIXTURES / platform / f"{name}.json").read_text())
    kind = core.adapter(platform).EVENTS[event_name][0]
    return parse_event(kind, platform, core.adapter(platform).normalize(data))


# (platform, fixture, event name) -> (session, tool name, tool_input subset, stop_hook_active)
STDIN = [
    ("cursor", "sessionStart", "sessionStart", CURSOR_SID, "", {}, False),
    ("cursor", "beforeShellExecution", "beforeShellExecution", CURSOR_SID, "Bash",
     {"command": "exec:python\nprint(6 * 7)"}, False),
    ("cursor", "preToolUse-write", "preToolUse", CURSOR_SID, "Write",
     {"file_path": "/home/dev/project/a.py", "content": "x = 1\n"}, False),
    ("cursor", "stop", "stop", CURSOR_SID, "", {}, False),
    ("cursor", "stop-again", "stop", CURSOR_SID, "", {}, True),
    ("copilot", "sessionStart", "sessionStart", COPILOT_SID, "", {}, True),
    ("copilot", "preToolUse", "preToolUse", COPILOT_SID, "Bash", {"command": "exec:python\nprint(6 * 7)"}, True),
    ("copilot", "preToolUse-create", "preToolUse", COPILOT_SID, "Write",
     {"file_path": "/home/dev/project/a.py", "content": "x = 1\n"}, True),
    ("copilot", "agentStop", "agentStop", COPILOT_SID, "", {}, True),
    ("opencode", "SessionStart", "SessionStart", OPENCODE_SID, "", {}, False),
    ("opencode", "PreToolUse", "PreToolUse", OPENCODE_SID, "Bash", {"command": "exec:python\nprint(6 * 7)"}, False),
    ("opencode", "PreToolUse-write", "PreToolUse", OPENCODE_SID, "Write",
     {"file_path": "/home/dev/project/a.py", "content": "x = 1\n"}, False),
    ("opencode", "Stop", "Stop", OPENCODE_SID, "", {}, True),
]


@pytest.mark.parametrize("platform, name, event_name, sid, tool, tool_input, active", STDIN)
def test_documented_stdin_reads_as_the_canonical_event(platform, name, event_name, sid, tool, tool_input, active):
    event = event_of(platform, name, event_name)
    assert (event.session_id, event.cwd, event.tool_name, event.stop_hook_active) == (sid, CWD, tool, active)
    assert tool_input.items() <= event.tool_input.items()
    if tool == "Bash":  # the exec: interception reads the shell line from the renamed fields
        assert is_exec(shell_command(event))


def test_fixtures_are_all_used():
    used = {(p, n) for p, n, *_ in STDIN}
    on_disk = {(f.parent.name, f.stem) for p in PLATFORMS for f in (FIXTURES / p).glob("*.json")}
    assert on_disk == used


def out(obj: dict) -> bytes:
    return (json.dumps(obj) + "\n").encode()


GOLDEN = [
    ("cursor", "sessionStart", Answer(context="phase PLAN"), out({"additional_context": "phase PLAN"})),
    ("cursor", "sessionStart", NOOP, b"{}\n"),
    ("cursor", "beforeShellExecution", Answer("deny", "42"),
     out({"permission": "deny", "user_message": "42", "agent_message": "42"})),
    ("cursor", "preToolUse", Answer("ask", "a person approves"),
     out({"permission": "ask", "user_message": "a person approves", "agent_message": "a person approves"})),
    ("cursor", "preToolUse", Answer("allow", "careful"), out({"permission": "allow", "agent_message": "careful"})),
    ("cursor", "preToolUse", NOOP, b"{}\n"),
    ("cursor", "stop", Answer(block=True, reason="2 items open"), out({"followup_message": "2 items open"})),
    ("cursor", "stop", Answer(reason="advisory"), b"{}\n"),
    ("cursor", "afterFileEdit", Answer("deny", "ignored"), b"{}\n"),
    ("copilot", "preToolUse", Answer("deny", "42"),
     out({"permissionDecision": "deny", "permissionDecisionReason": "42"})),
    ("copilot", "preToolUse", Answer("allow", "careful"), b""),
    ("copilot", "preToolUse", NOOP, b""),
    ("copilot", "agentStop", Answer(block=True, reason="2 items open"),
     out({"decision": "block", "reason": "2 items open"})),
    ("copilot", "agentStop", NOOP, b""),
    ("copilot", "sessionStart", Answer(context="phase PLAN"), out({"additionalContext": "phase PLAN"})),
    ("copilot", "sessionStart", NOOP, b""),
    ("opencode", "PreToolUse", Answer("deny", "42"),
     out({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                 "permissionDecisionReason": "42"}})),
    ("opencode", "SessionStart", Answer(context="c"),
     out({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "c"}})),
    ("opencode", "Stop", Answer(block=True, reason="r"), out({"decision": "block", "reason": "r"})),
    ("kilo", "Stop", NOOP, b""),
]


@pytest.mark.parametrize("platform, event, answer, stdout", GOLDEN)
def test_answer_renders_exactly(platform, event, answer, stdout):
    assert core.adapter(platform).EVENTS[event][1](answer) == (stdout, 0)


def hook(home, platform: str, event: str, stdin: bytes) -> subprocess.CompletedProcess:
    return subprocess.run(cli_argv() + ["hook", event, "--platform", platform], input=stdin, capture_output=True,
                          env={**home.env, "PLUGKIT_HOOK_STDIN_TIMEOUT": "0.5"}, timeout=30)


@pytest.mark.parametrize("platform, event, name, stdout", [
    ("cursor", "preToolUse", "preToolUse-write", b"{}\n"),
    ("cursor", "stop", "stop", b"{}\n"),
    ("copilot", "preToolUse", "preToolUse-create", b""),
    ("copilot", "agentStop", "agentStop", b""),
    ("opencode", "PreToolUse", "PreToolUse-write", b""),
])
def test_cli_fails_open_without_a_runner(home, platform, event, name, stdout):
    result = hook(home, platform, event, (FIXTURES / platform / f"{name}.json").read_bytes())
    assert (result.stdout, result.returncode) == (stdout, 0)
    assert result.stderr.decode().count("\n") == 1 and "fail-open" in result.stderr.decode()


# --- plugkit install ---------------------------------------------------------------------------

def install(home, cwd, *args: str, user_home=None) -> subprocess.CompletedProcess:
    env = dict(home.env, HOME=str(user_home or cwd), PATH="/usr/bin:/bin")
    return subprocess.run(cli_argv() + ["install", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60)


def test_cursor_merges_keeps_the_users_hooks_and_uninstalls_exactly(home, tmp_path):
    path = tmp_path / ".cursor" / "hooks.json"
    path.parent.mkdir()
    mine = {"version": 1, "hooks": {"afterFileEdit": [{"command": "./fmt.sh"}], "stop": [{"command": "./ding.sh"}]}}
    path.write_text(json.dumps(mine))
    for _ in range(2):  # idempotent
        done = install(home, tmp_path, "--platform", "cursor")
        assert done.returncode == 0, done.stderr
    config = json.loads(path.read_text())
    assert config["version"] == 1 and config["hooks"]["afterFileEdit"] == [{"command": "./fmt.sh"}]
    ours = {e: [h for h in hs if is_ours(h["command"])] for e, hs in config["hooks"].items()}
    assert {e: len(hs) for e, hs in ours.items() if hs} == {
        "sessionStart": 1, "beforeShellExecution": 1, "preToolUse": 1, "stop": 1, "sessionEnd": 1}
    # the shell comes once, by beforeShellExecution
    assert set(ours["preToolUse"][0]["matcher"].split("|")) == {"Write", "StrReplace", "Edit", "Delete"}
    assert ours["beforeShellExecution"][0]["timeout"] == 60  # seconds
    first = shlex.split(ours["stop"][0]["command"])[0]
    assert os.path.isabs(first) and ours["stop"][0]["command"].endswith("hook stop --platform cursor")
    assert config["hooks"]["stop"][0] == {"command": "./ding.sh"}
    done = install(home, tmp_path, "--platform", "cursor", "--uninstall")
    assert done.returncode == 0 and "removed 5" in done.stdout
    assert json.loads(path.read_text()) == mine


def test_copilot_owns_its_file_and_removes_it_on_uninstall(home, tmp_path):
    path = tmp_path / ".github" / "hooks" / "plugkit.json"
    printed = install(home, tmp_path, "--platform", "copilot", "--print")
    assert printed.returncode == 0 and not path.exists() and '"bash":' in printed.stdout
    assert install(home, tmp_path, "--platform", "copilot").returncode == 0
    config = json.loads(path.read_text())
    assert config["version"] == 1
    assert set(config["hooks"]) == {"sessionStart", "preToolUse", "agentStop", "sessionEnd"}
    for event, (entry,) in config["hooks"].items():
        assert entry["type"] == "command" and entry["bash"].endswith(f"hook {event} --platform copilot")
        assert is_ours(entry["bash"]) and entry["timeoutSec"] in (15, 30, 60)
    assert install(home, tmp_path, "--platform", "copilot", "--uninstall").returncode == 0
    assert not path.exists() and not (tmp_path / ".github").exists()  # install made it; uninstall takes it


@pytest.mark.parametrize("platform, project, user", [
    ("opencode", ".opencode/plugins/plugkit.js", ".config/opencode/plugins/plugkit.js"),
    ("kilo", ".kilo/plugins/plugkit.js", ".config/kilo/plugins/plugkit.js"),
])
def test_plugin_is_written_with_the_absolute_command_and_removed(home, tmp_path, platform, project, user):
    work, user_home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    user_home.mkdir()
    assert install(home, work, "--platform", platform, user_home=user_home).returncode == 0
    text = (work / project).read_text()
    assert "__PLUGKIT__" not in text and '"tool.execute.before"' in text and "session.idle" in text
    argv = json.loads(text.split("const PLUGKIT = ", 1)[1].split(";", 1)[0])
    assert os.path.isabs(argv[0]) and os.access(argv[0], os.X_OK)
    assert install(home, work, "--platform", platform, "--user", user_home=user_home).returncode == 0
    assert (user_home / user).read_text() == text
    assert install(home, work, "--platform", platform, "--uninstall", user_home=user_home).returncode == 0
    assert not (work / project).exists() and (user_home / user).exists()
    assert not any(work.iterdir())  # the plugin's directories went with it
    # A file of the same name that plugkit did not write is left alone, with one line saying so.
    (work / project).parent.mkdir(parents=True)
    (work / project).write_text("export const Mine = async () => ({})\n")
    refused = install(home, work, "--platform", platform, user_home=user_home)
    assert refused.returncode != 0 and "not written by plugkit" in refused.stderr
    assert (work / project).read_text().startswith("export const Mine")


def test_plugin_is_valid_javascript(home, tmp_path):
    node = subprocess.run(["sh", "-c", "command -v node"], capture_output=True, text=True).stdout.strip()
    assert node, "node is needed to check the plugin (scripts/setup installs it for tests/hosts)"
    assert install(home, tmp_path, "--platform", "opencode").returncode == 0
    plugin = tmp_path / ".opencode" / "plugins" / "plugkit.js"
    mjs = tmp_path / "plugkit.mjs"
    mjs.write_text(plugin.read_text())
    check = subprocess.run([node, "--check", str(mjs)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr


def test_auto_installs_for_each_host_the_workspace_shows(home, tmp_path):
    (tmp_path / ".cursor").mkdir()
    (tmp_path / ".opencode").mkdir()
    (tmp_path / ".claude").mkdir()
    done = install(home, tmp_path, "--platform", "auto")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".cursor" / "hooks.json").is_file() and (tmp_path / ".opencode/plugins/plugkit.js").is_file()
    assert (tmp_path / ".claude" / "settings.local.json").is_file()
    assert not (tmp_path / ".github").exists() and not (tmp_path / ".gemini").exists()
    gone = install(home, tmp_path, "--platform", "auto", "--uninstall")
    assert gone.returncode == 0 and not (tmp_path / ".cursor" / "hooks.json").exists()
    assert not (tmp_path / ".opencode/plugins/plugkit.js").exists()


def test_auto_with_nothing_to_find_names_the_platforms(home, tmp_path):
    done = install(home, tmp_path, "--platform", "auto")
    assert done.returncode != 0 and "no agent host found" in done.stderr and "cursor" in done.stderr
    assert list(Path(tmp_path).iterdir()) == []
