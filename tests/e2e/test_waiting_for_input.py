"""A task blocked reading its stdin is said at once, everywhere an agent looks (the foreground
answer, exec:status, exec:tasks, the hook's answer), with the command that moves it on;
--no-stdin (what the hooks use for code that does not read stdin) gives end-of-file at once."""

import json
import re
import subprocess

import pytest

from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e

READER = "import sys; print('prompt>', flush=True); print(len(sys.stdin.read()))"


def waiting_id(text: str) -> int:
    """The task said waiting, with the command that feeds it named once (not twice over)."""
    found = re.search(r"task_(\d+) is waiting for input", text)
    assert found, text
    tid = int(found.group(1))
    assert text.count(f"exec:type task_{tid} TEXT") == 1, text
    return tid


def test_a_stdin_reader_is_reported_waiting_then_eof_finishes_it(shared_home):
    # The wait ceiling is far away: only the detection can end this call early.
    # --stdin: the task's stdin stays open for exec:type (without it, the suite's own stdin would be the task's).
    started = shared_home.cli("exec:python", "--stdin", "--wait", "60", READER)
    assert started.returncode == 0 and started.stdout == "prompt>\n", started.stderr
    tid = waiting_id(started.stderr)
    assert "still running after" not in started.stderr
    assert f"plugkit exec:type task_{tid} --eof" in started.stderr

    status = shared_home.cli("exec:status", f"task_{tid}")
    assert waiting_id(status.stderr) == tid and f"task_{tid} running" in status.stderr
    table = shared_home.cli("exec:tasks")
    assert "waiting-input" in table.stdout and waiting_id(table.stdout) == tid
    listed = json.loads(shared_home.cli("exec:tasks", "--json").stdout)["tasks"]
    assert [t["waiting_for_input"] for t in listed] == [True]

    assert shared_home.cli("exec:type", f"task_{tid}", "abc", "--eof").returncode == 0
    ended = shared_home.cli("exec:sleep", f"task_{tid}", "30")
    assert ended.returncode == 0 and ended.stdout == "4\n", ended.stderr
    assert f"task_{tid} completed" in ended.stderr
    assert json.loads(shared_home.cli("exec:tasks", "--json").stdout)["tasks"][0]["waiting_for_input"] is False


def test_sleep_on_a_waiting_task_returns_at_once_saying_so(shared_home):
    tid = waiting_id(shared_home.cli("exec:bash", "--stdin", "--wait", "60", "read x; echo got $x").stderr)
    slept = shared_home.cli("exec:sleep", f"task_{tid}", "60")
    assert slept.returncode == 0 and waiting_id(slept.stderr) == tid
    assert shared_home.cli("exec:type", f"task_{tid}", "hi").returncode == 0
    done = shared_home.cli("exec:sleep", f"task_{tid}", "30")
    assert done.stdout == "got hi\n" and done.returncode == 0


def test_no_stdin_gives_end_of_file_at_once(shared_home):
    result = shared_home.cli("exec:python", "--no-stdin", "--wait", "60", READER)
    assert result.returncode == 0 and result.stdout == "prompt>\n0\n", result.stderr
    assert "waiting for input" not in result.stderr


def hook_reason(home, work, command: str) -> str:
    event = {"session_id": "stdin", "cwd": str(work), "hook_event_name": "PreToolUse",
             "tool_name": "Bash", "tool_input": {"command": command}}
    done = subprocess.run(cli_argv() + ["hook", "PreToolUse", "--platform", "claude-code"],
                          input=json.dumps(event), capture_output=True, text=True,
                          env={**home.env, "PLUGKIT_HOOK_WAIT": "40"}, timeout=90)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]


def test_hook_reports_a_reader_waiting_and_feeds_it_through_exec_type(shared_home, tmp_path):
    reason = hook_reason(shared_home, tmp_path, "exec:python\n" + READER)
    tid = waiting_id(reason)
    assert "prompt>" in reason and "still running after" not in reason
    assert f"exec:type task_{tid} --eof" in reason
    assert "sent 0 bytes" in hook_reason(shared_home, tmp_path, f"exec:type task_{tid} --eof")
    done = hook_reason(shared_home, tmp_path, f"exec:sleep task_{tid} 30")
    assert "\n0\n" in done and f"task_{tid} completed" in done


@pytest.mark.parametrize("command, said", [
    ("exec:bash\ncat; echo after-cat", "after-cat"),  # no sign of reading stdin: EOF at once
    ("exec:bash --no-stdin\nread x; echo read-ended $?", "read-ended 1"),
])
def test_hook_code_that_does_not_ask_for_input_gets_end_of_file(shared_home, tmp_path, command, said):
    reason = hook_reason(shared_home, tmp_path, command)
    assert said in reason and "completed" in reason, reason
    assert "waiting for input" not in reason


def test_hook_stdin_flag_keeps_it_open(shared_home, tmp_path):
    reason = hook_reason(shared_home, tmp_path, "exec:bash --stdin\ncat")
    tid = waiting_id(reason)
    hook_reason(shared_home, tmp_path, f"exec:close task_{tid}")
