"""`plugkit install --platform P` registers the host's session-end event wherever the host has
one, so a session's leftover tasks end with it (issue 30.3). Read from the pinned hosts' sources:
Claude Code, Qwen Code (interactive and ACP only: `qwen -p` fires none), Gemini CLI (on every exit,
its cleanup), Codex 0.169 (hooks/src/events/session_end.rs), Copilot CLI and Cursor (their hooks
references). Through the real command, then through the hook the host would run."""

import json
import subprocess
import tomllib

import pytest

from client.hooks import core, install
from tests.support.runner_home import cli_argv

# platform -> the host's own name of its session-end event
SESSION_END = {"claude-code": "SessionEnd", "qwen": "SessionEnd", "gemini": "SessionEnd", "codex": "SessionEnd",
               "cursor": "sessionEnd", "copilot": "sessionEnd"}


def installed_commands(path, fmt: str) -> dict[str, list[str]]:
    """event -> the commands registered for it, whatever the host's file format."""
    text = path.read_text()
    config = tomllib.loads(text) if fmt == "toml" else json.loads(text)
    out: dict[str, list[str]] = {}
    for event, entries in config["hooks"].items():
        for entry in entries if isinstance(entries, list) else []:
            hooks = entry.get("hooks", [entry])
            out.setdefault(event, []).extend(h.get("command") or h.get("bash") for h in hooks)
    return out


@pytest.mark.parametrize("platform", sorted(SESSION_END))
def test_install_registers_the_hosts_session_end(home, tmp_path, platform):
    done = subprocess.run(cli_argv() + ["install", "--platform", platform], cwd=tmp_path,
                          env=dict(home.env, HOME=str(tmp_path)), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    target = install.TARGETS[platform]
    event = SESSION_END[platform]
    commands = installed_commands(tmp_path / target.project_path, target.fmt).get(event, [])
    assert len(commands) == 1 and commands[0].endswith(f"hook {event} --platform {platform}"), commands
    assert core.adapter(platform).EVENTS[event][0] == "session_end"


@pytest.mark.parametrize("platform", sorted(SESSION_END))
def test_session_end_hook_is_a_quiet_no_op_without_a_runner(home, tmp_path, platform):
    stdin = json.dumps({"session_id": "s1", "conversation_id": "s1", "sessionId": "s1", "cwd": str(tmp_path),
                        "hook_event_name": SESSION_END[platform], "reason": "exit"})
    done = subprocess.run(cli_argv() + ["hook", SESSION_END[platform], "--platform", platform], input=stdin,
                          cwd=tmp_path, env=home.env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout.strip() in ("", "{}"), (done.stdout, done.stderr)
