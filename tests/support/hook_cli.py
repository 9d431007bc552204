"""`plugkit hook` run as a host runs it, through the real CLI: an event in, the host's answer out."""

import json
import subprocess

from tests.support.runner_home import cli_argv


def hook(home, event: str, data, platform: str = "claude-code", **env: str) -> subprocess.CompletedProcess:
    stdin = data if isinstance(data, bytes) else json.dumps(data).encode()
    return subprocess.run(cli_argv() + ["hook", event, "--platform", platform], input=stdin, capture_output=True,
                          env={**home.env, **env}, timeout=90)


def bash(work, sid: str, command: str, tool: str = "Bash") -> dict:
    return {"session_id": sid, "cwd": str(work), "hook_event_name": "PreToolUse", "tool_name": tool,
            "tool_input": {"command": command}}
