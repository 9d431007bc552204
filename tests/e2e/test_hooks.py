"""`plugkit hook` end to end: the real CLI, as a platform would call it, against a real runner
(auto-started by SessionStart or by an exec: command) in a temp PLUGKIT_HOME."""

import json
import subprocess
import time

import pytest

from tests.support.load import stretched
from tests.support.runner_home import rpc
from tests.support.hook_cli import bash, hook

pytestmark = pytest.mark.e2e



def denied(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    return out["permissionDecisionReason"]


@pytest.fixture
def work(tmp_path):
    path = tmp_path / "work"
    path.mkdir()
    return path


def listed(home, sid: str, work) -> list[dict]:
    return rpc(home, "task.list", {"session_id": sid, "cwd": str(work)})["tasks"]


def test_exec_runs_in_the_runner_in_the_session_from_stdin(shared_home, work):
    # A PLUGKIT_SESSION in the environment must not matter: the platform's stdin names the session.
    result = hook(shared_home, "PreToolUse", bash(work, "sess-A", "exec:python\nimport os\nprint(6 * 7, os.getcwd())"),
                  PLUGKIT_SESSION="from-env")
    reason = denied(result)
    assert f"42 {work}\n" in reason and "completed: exit 0" in reason and "do not run it again" in reason
    tasks = listed(shared_home, "sess-A", work)
    assert [t["state"] for t in tasks] == ["completed"] and tasks[0]["session_id"] == "sess-A"
    assert listed(shared_home, "from-env", work) == []


def test_long_exec_comes_back_backgrounded_with_its_id(shared_home, work):
    result = hook(shared_home, "PreToolUse", bash(work, "sess-B", "exec:bash\necho first; sleep 30"),
                  PLUGKIT_HOOK_WAIT="3")  # "first" must be in: 0.5 s could miss it on a loaded machine
    reason = denied(result)
    tid = listed(shared_home, "sess-B", work)[0]["task_id"]
    assert "first\n" in reason and f"task_{tid} is still running" in reason
    assert f"exec:status task_{tid}" in reason and f"exec:close task_{tid}" in reason
    status = denied(hook(shared_home, "PreToolUse", bash(work, "sess-B", f"exec:status task_{tid}")))
    assert f"task_{tid} running" in status
    closed = denied(hook(shared_home, "PreToolUse", bash(work, "sess-B", f"plugkit exec:close task_{tid}")))
    assert f"closed task_{tid} killed" in closed
    assert [t["state"] for t in listed(shared_home, "sess-B", work)] == ["killed"]  # its record stays
    dropped = denied(hook(shared_home, "PreToolUse", bash(work, "sess-B", f"plugkit exec:close task_{tid} --forget")))
    assert "record is dropped" in dropped
    assert listed(shared_home, "sess-B", work) == []


def test_big_output_is_bounded_head_and_tail_with_the_way_to_the_rest(shared_home, work):
    code = "exec:python\nprint('HEAD')\nfor i in range(20000): print('line', i)\nprint('TAIL')"
    reason = denied(hook(shared_home, "PreToolUse", bash(work, "sess-C", code), PLUGKIT_HOOK_MAX_OUTPUT="4000"))
    tid = listed(shared_home, "sess-C", work)[0]["task_id"]
    assert "HEAD" in reason and "TAIL" in reason and len(reason) < 6000
    assert f"exec:status task_{tid} --from " in reason and "not shown" in reason  # a bounded next step


@pytest.mark.parametrize("platform, event, tool, wrap", [
    ("gemini", "BeforeTool", "run_shell_command", lambda c: c),
    ("codex", "PreToolUse", "Bash", lambda c: ["bash", "-lc", c]),
    ("qwen", "PreToolUse", "run_shell_command", lambda c: c),
])
def test_exec_through_other_platforms(shared_home, work, platform, event, tool, wrap):
    data = bash(work, f"sess-{platform}", "", tool)
    data["tool_input"]["command"] = wrap("exec:bash\necho from-$PLUGKIT_TASK_ID-runner")
    result = hook(shared_home, event, data, platform)
    doc = json.loads(result.stdout)
    reason = doc["reason"] if platform == "gemini" else doc["hookSpecificOutput"]["permissionDecisionReason"]
    assert result.returncode == 0 and "-runner" in reason and "from-" in reason
    assert doc.get("decision", "deny") == "deny"


def test_session_start_writes_the_env_file_and_injects_context(home, work, tmp_path):
    env_file = tmp_path / "claude-env"
    env_file.write_text("export FOO=1\n")
    data = {"session_id": "sess-D", "cwd": str(work), "hook_event_name": "SessionStart", "source": "startup"}
    for _ in range(2):
        result = hook(home, "SessionStart", data, CLAUDE_ENV_FILE=str(env_file))
        assert result.returncode == 0, result.stderr
    assert env_file.read_text() == "export FOO=1\nexport PLUGKIT_SESSION=sess-D\n"
    out = json.loads(result.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart" and "exec:<lang>" in out["additionalContext"]
    assert len(home.runner_pids()) == 1  # SessionStart started it


def test_prompt_context_only_when_the_status_changed(shared_home, work):
    base = {"session_id": "sess-E", "cwd": str(work), "hook_event_name": "UserPromptSubmit", "prompt": "go"}
    hook(shared_home, "SessionStart", dict(base, hook_event_name="SessionStart", source="startup"))
    assert hook(shared_home, "UserPromptSubmit", base).stdout == b""
    denied(hook(shared_home, "PreToolUse", bash(work, "sess-E", "exec:bash\nsleep 30"), PLUGKIT_HOOK_WAIT="0.3"))
    changed = json.loads(hook(shared_home, "UserPromptSubmit", base).stdout)["hookSpecificOutput"]["additionalContext"]
    assert "still running" in changed and "(bash, pid" in changed
    assert hook(shared_home, "UserPromptSubmit", base).stdout == b""
    ended = hook(shared_home, "SessionEnd", dict(base, hook_event_name="SessionEnd", reason="exit"))
    assert (ended.stdout, ended.returncode) == (b"", 0)
    assert listed(shared_home, "sess-E", work) == []


def enforce(work) -> None:
    (work / ".plugkit").mkdir()
    (work / ".plugkit" / "config.toml").write_text('gates = "enforce"\n')


def test_stop_hook_active_never_loops_on_one_reason(shared_home, work):
    enforce(work)
    data = {"session_id": "sess-F", "cwd": str(work), "hook_event_name": "Stop", "stop_hook_active": False}
    hook(shared_home, "SessionStart", dict(data, hook_event_name="SessionStart"))
    first = hook(shared_home, "Stop", data)
    assert first.returncode == 0 and json.loads(first.stdout)["decision"] == "block"
    again = hook(shared_home, "Stop", dict(data, stop_hook_active=True))
    assert again.returncode == 0 and "decision" not in json.loads(again.stdout or b"{}")
    gemini = hook(shared_home, "AfterAgent", data, "gemini")
    assert json.loads(gemini.stdout)["decision"] == "deny"


def test_gates_deny_a_write_before_the_phase_allows_it(shared_home, work):
    enforce(work)
    hook(shared_home, "SessionStart", {"session_id": "sess-G", "cwd": str(work), "source": "startup"})
    data = {"session_id": "sess-G", "cwd": str(work), "tool_name": "Write",
            "tool_input": {"file_path": str(work / "a.py"), "content": "x = 1\n"}}
    assert "PLAN" in denied(hook(shared_home, "PreToolUse", data))
    plain = hook(shared_home, "PreToolUse", bash(work, "sess-G", "ls -la"))
    assert (plain.stdout, plain.returncode) == (b"", 0)


def test_runner_down_plain_call_is_allowed_fast(home, work):
    assert home.cli("runner", "start").returncode == 0
    port_file = home.path / "port"
    stale = port_file.read_text()
    assert home.cli("runner", "stop").returncode == 0
    dead = subprocess.Popen(["true"])
    dead.wait()
    # What a crashed runner leaves behind: a port file naming a pid that is gone.
    port_file.write_text(json.dumps(dict(json.loads(stale), pid=dead.pid)))
    began = time.monotonic()
    result = hook(home, "PreToolUse", bash(work, "sess-H", "ls"))
    assert time.monotonic() - began < stretched(2.0)  # no wait for a runner; 2 s on a quiet machine
    assert (result.stdout, result.returncode) == (b"", 0) and b"fail-open" in result.stderr
    assert home.runner_pids() == []


def test_fail_closed_denies_and_garbage_stays_a_noop_with_a_runner(home, work):
    closed = hook(home, "PreToolUse", bash(work, "sess-I", "ls"), PLUGKIT_HOOKS_FAIL="closed")
    assert "PLUGKIT_HOOKS_FAIL=closed" in denied(closed)
    hook(home, "SessionStart", {"session_id": "sess-I", "cwd": str(work)})
    garbage = hook(home, "PreToolUse", b"\x00{{not json", PLUGKIT_HOOKS_FAIL="")
    assert (garbage.stdout, garbage.returncode) == (b"", 0) and b"malformed event" in garbage.stderr
