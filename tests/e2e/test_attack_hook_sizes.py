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


def _event(agent, repo, tool: str, tool_input: dict) -> bytes:
    return json.dumps({"session_id": agent.session, "cwd": str(repo), "hook_event_name": "PreToolUse",
                       "tool_name": tool, "tool_input": tool_input}).encode()


def test_a_call_too_big_for_the_runner_is_checked_or_denied_never_let_through(home, tmp_path):
    """The hook's request over the runner's 1 MiB body limit (HTTP 413) failed open: a MultiEdit
    whose edits hold 2 MB wrote in PLAN. Its contents are cut before they travel (the gates need
    its path), so it meets the gates; a command padded past the limit cannot be cut (its end may
    be what the gates refuse): denied under enforce, and always for a `plugkit work` worker."""
    repo = make_repo(tmp_path / "repo", 'gates = "enforce"\n')
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    edits = {"file_path": str(repo / "README"), "edits": [{"old_string": "a", "new_string": "b" * 2_000_000}]}
    answer = _raw_hook(home, repo, _event(agent, repo, "MultiEdit", edits))
    assert _decision(answer) == "deny" and "phase PLAN" in json.dumps(answer), answer
    padded = {"command": "true # " + "p" * 2_000_000}
    answer = _raw_hook(home, repo, _event(agent, repo, "Bash", padded))
    assert _decision(answer) == "deny" and "body limit" in json.dumps(answer), answer
    advisory = make_repo(tmp_path / "advisory", 'gates = "advisory"\n')
    assert _decision(_raw_hook(home, advisory, _event(agent, advisory, "Bash", padded))) == "allow"
    worker = subprocess.run(cli_argv() + ["hook", "PreToolUse", "--platform", "claude-code"],
                            input=_event(agent, advisory, "Bash", padded), capture_output=True,
                            env={**home.env, "PLUGKIT_SESSION_ID": "a-worker"}, cwd=str(advisory), timeout=120)
    answer = json.loads(worker.stdout)
    assert _decision(answer) == "deny" and "plugkit work" in json.dumps(answer), answer


def test_an_event_whose_stdin_never_ends_is_denied_where_gates_are_enforced(home, tmp_path):
    """A Write event whose stdin never reaches EOF within the hook's read budget (a host stalled
    mid-write, or a pipe held open) is a call nobody checked: it failed open as "no event arrived".
    Under enforce it is denied like any unread event; elsewhere it still fails open."""
    repo = make_repo(tmp_path / "repo", 'gates = "enforce"\n')
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    body = _event(agent, repo, "Write", {"file_path": str(repo / "a.py"), "content": "x = 1\n"})
    for root, decision in ((repo, "deny"), (make_repo(tmp_path / "advisory", 'gates = "advisory"\n'), "allow")):
        err = tmp_path / f"{decision}.err"
        with open(err, "wb") as errors:
            hook = subprocess.Popen(cli_argv() + ["hook", "PreToolUse", "--platform", "claude-code"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                                    env={**home.env, "PLUGKIT_HOOK_STDIN_TIMEOUT": "0.5"}, cwd=str(root))
            try:
                hook.stdin.write(body[:-1])  # all but the closing brace, and the pipe held open
                hook.stdin.flush()
                out = hook.stdout.read()  # the hook answers once its read budget is spent
            finally:
                hook.stdin.close()
                hook.wait(timeout=60)
                hook.stdout.close()
        answer = json.loads(out or b"{}")
        assert _decision(answer) == decision, (answer, err.read_text())
