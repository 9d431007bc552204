"""The hook's pure parts: exec: command parsing, tool-input slimming, the env file, the fail-safe."""

import pytest

from client.hooks import core, exec_hook
from client.hooks.events import NOOP, SLIM_AT, Answer, Event, is_exec, shell_command, slim


@pytest.mark.parametrize("command, verb, args, code, timeout, wait", [
    ("exec:python\nprint(1)\nprint(2)", "python", [], "print(1)\nprint(2)", None, None),
    ("  exec:bash ls -la", "bash", [], "ls -la", None, None),
    ("exec:bash echo 'a  b'\necho c", "bash", [], "echo 'a  b'\necho c", None, None),  # raw: no shell ran
    ("plugkit exec:bash echo 'a  b'", "bash", [], "echo a  b", None, None),  # as shell + CLI would join words
    ("/opt/venv/bin/plugkit exec:python\nprint(1)", "python", [], "print(1)", None, None),
    ("plugkit exec:python <<'EOF'\nprint(42)\nEOF", "python", [], "print(42)", None, None),
    ("exec:python <<-END\n\tprint(1)\n\tEND\n", "python", [], "print(1)", None, None),
    ("exec:python --timeout 5 --wait=2\nimport time", "python", [], "import time", 5.0, 2.0),
    # a port is not code: its words are the verb's arguments, as on the command line
    ("exec:serial /dev/ttyUSB0 9600 --hex", "serial", ["/dev/ttyUSB0", "9600", "--hex"], "", None, None),
    ("exec:status task_3 --full", "status", ["task_3", "--full"], "", None, None),
    ("exec:type 3 'hello world'", "type", ["3", "hello world"], "", None, None),
    ("exec:tasks", "tasks", [], "", None, None),
    ("exec:sleep task_3 5 --until ready", "sleep", ["task_3", "5", "--until", "ready"], "", None, None),
    ("plugkit kill-port 8080", "kill-port", ["8080"], "", None, None),
    ("exec:kill-port 8080", "kill-port", ["8080"], "", None, None),
])
def test_exec_commands_parse(command, verb, args, code, timeout, wait):
    assert is_exec(command)
    r = exec_hook.parse(command)
    assert (r.verb, r.args, r.code, r.timeout_s, r.wait_s) == (verb, args, code, timeout, wait)


@pytest.mark.parametrize("command, said", [
    ("exec:\nprint(1)", "name the language"),
    ("exec:python", "no code"),
    ("exec:python   \n  \n", "no code"),
    ("exec:status task_1\nmore", "on one line"),
    ("exec:type 3 'unbalanced", "cannot split"),
    ("exec:python --timeout soon\nx", "--timeout must be a number"),  # the CLI's own words
    ("exec:python --timeoutx 3\nx", "unknown option --timeoutx"),
])
def test_bad_exec_commands_say_why(command, said):
    with pytest.raises(ValueError, match=said):
        exec_hook.parse(command)


@pytest.mark.parametrize("command, expected", [
    ("ls -la", False), ("echo exec:python", False), ("plugkit runner status", False),
    ("plugkit exec:python x", True), ("exec:tasks", True), ("plugkit kill-port 1", True),
    ("kill-port 80", False), ("", False), ("plugkit", False),
])
def test_only_exec_commands_are_intercepted(command, expected):
    assert is_exec(command) is expected


def test_bad_exec_command_is_denied_with_the_reason_not_run():
    event = Event("pre_tool", "claude-code", "s", "/nonexistent", "Bash", {"command": "exec:python"})
    answer = exec_hook.run(event, "exec:python")
    assert answer.decision == "deny" and "was not run: no code" in answer.reason


@pytest.mark.parametrize("tool_name, tool_input, command", [
    ("Bash", {"command": "ls"}, "ls"),
    ("run_shell_command", {"command": "ls"}, "ls"),
    ("Bash", {"command": ["bash", "-lc", "exec:bash\nls"]}, "exec:bash\nls"),
    ("shell", {"command": ["ls", "-la"]}, "ls -la"),
    ("exec_command", {"cmd": "ls"}, "ls"),
    ("Write", {"command": "ls"}, None),
    ("Bash", {"command": 7}, None),
])
def test_shell_command_per_platform_spelling(tool_name, tool_input, command):
    assert shell_command(Event("pre_tool", "p", "s", "/", tool_name, tool_input)) == command


def test_slim_keeps_paths_and_commands_but_cuts_contents():
    patch = "*** Begin Patch\n*** Update File: a.py\n" + "+x\n" * 40000 + "*** End Patch\n"
    big = {"file_path": "/w/a.py", "content": "y" * 200_000, "command": "z" * 100_000, "input": patch}
    out = slim(big)
    assert out["file_path"] == "/w/a.py" and out["content"] == "y" * SLIM_AT
    assert out["command"] == big["command"]
    assert out["input"] == "*** Begin Patch\n*** Update File: a.py\n*** End Patch"
    assert slim({"content": "small"}) == {"content": "small"}


def test_env_file_gets_one_export_line_appended(tmp_path, monkeypatch):
    env_file = tmp_path / "claude.env"
    env_file.write_text("export OTHER=1")  # no trailing newline: ours must not be glued to it
    monkeypatch.setenv("CLAUDE_ENV_FILE", str(env_file))
    core.write_env_file("sess 1")
    core.write_env_file("sess 1")
    assert env_file.read_text() == "export OTHER=1\nexport PLUGKIT_SESSION='sess 1'\n"


def test_env_file_unwritable_is_a_note_not_a_failure(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CLAUDE_ENV_FILE", str(tmp_path / "missing-dir" / "env"))
    core.write_env_file("s")
    assert "could not write $CLAUDE_ENV_FILE" in capsys.readouterr().err


@pytest.mark.parametrize("mode, kind, active, expected", [
    ("", "pre_tool", False, NOOP),
    ("open", "stop", False, NOOP),
    ("", "session_start", False, NOOP),
    ("closed", "session_start", False, NOOP),
    ("closed", "prompt", False, NOOP),
    ("CLOSED", "stop", True, NOOP),
])
def test_fail_safe_answers(monkeypatch, capsys, mode, kind, active, expected):
    monkeypatch.setenv("PLUGKIT_HOOKS_FAIL", mode)
    event = Event(kind, "claude-code", "s", "/", stop_hook_active=active)
    assert core.failed(kind, "no runner", event) == expected
    assert capsys.readouterr().err.count("\n") == 1


def test_fail_closed_denies_tool_calls_and_blocks_a_first_stop(monkeypatch):
    monkeypatch.setenv("PLUGKIT_HOOKS_FAIL", "closed")
    deny = core.failed("pre_tool", "no runner")
    assert deny.decision == "deny" and "PLUGKIT_HOOKS_FAIL=closed" in deny.reason
    assert core.failed("stop", "no runner", Event("stop", "p", "s", "/")).block is True
    # Unparsable stdin may hide stop_hook_active: blocking then could loop, so it never blocks.
    assert core.failed("stop", "malformed event") == NOOP


def test_transcript_keeps_order_and_marks_notes():
    t = exec_hook.Transcript()
    t.write("stdout", "partial")
    t.note("task_1 ended")
    t.write("stderr", "err\n")
    assert t.text() == "partial\n[plugkit] task_1 ended\nerr\n"


def test_bound_keeps_head_and_tail():
    text = "H" * 100 + "M" * 1000 + "T" * 100
    out = exec_hook._bound(text, 200)
    assert out.startswith("H" * 100) and out.endswith("T" * 100) and "1000 characters left out" in out
    assert exec_hook._bound("short", 200) == "short"


def test_answer_equality_and_repr():
    assert Answer("deny", "x") == Answer("deny", "x") != Answer("deny", "y")
    assert "decision='deny'" in repr(Answer("deny", "x"))
