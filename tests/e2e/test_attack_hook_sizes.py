"""A PreToolUse event too big for the hook to read (its stdin cap, 16 MiB) is a write nobody
checked: under gates = "enforce" it is denied, as a runner that does not answer is. Before, a
Write of 17 MB in PLAN was allowed (the unread event failed open), so padding any file past the
cap walked around the gates. Outside an enforcing workspace the hook still fails open. Real
`plugkit hook`, real runner."""

import json
import subprocess

import pytest

from tests.support.agent import Agent, make_repo
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e
BIG = 17 << 20


def _raw_hook(home, repo, body: bytes) -> dict:
    done = subprocess.run(cli_argv() + ["hook", "PreToolUse", "--platform", "claude-code"], input=body,
                          capture_output=True, env=home.env, cwd=str(repo), timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout or b"{}")


def _decision(answer: dict) -> str:
    return answer.get("hookSpecificOutput", {}).get("permissionDecision", "allow")


def test_a_write_past_the_hooks_stdin_cap_is_denied_where_gates_are_enforced(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "enforce"\n')
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    assert agent.write("a.py", "x = 1\n")[0] == "deny"  # PLAN: no file writes
    # As a host runs it: in the project, the event on stdin (Claude Code's field order).
    event = {"session_id": agent.session, "cwd": str(repo), "hook_event_name": "PreToolUse", "tool_name": "Write",
             "tool_input": {"file_path": str(repo / "a.py"), "content": "#" * BIG + "\nx = 1\n"}}
    answer = _raw_hook(home, repo, json.dumps(event).encode())
    reason = answer.get("hookSpecificOutput", {}).get("permissionDecisionReason", "")
    assert _decision(answer) == "deny", answer
    assert "16 MiB" in reason and str(repo) in reason, reason
    # Not JSON at all (a host's bug, or cut short): no check ran either.
    answer = _raw_hook(home, repo, b'{"session_id": "s", "tool_name": "Write", "tool_input": {"content": "x')
    assert _decision(answer) == "deny", answer


def test_outside_an_enforcing_workspace_an_unread_event_still_fails_open(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    event = {"session_id": agent.session, "cwd": str(repo), "hook_event_name": "PreToolUse", "tool_name": "Write",
             "tool_input": {"file_path": str(repo / "a.py"), "content": "#" * BIG}}
    assert _decision(_raw_hook(home, repo, json.dumps(event).encode())) == "allow"
