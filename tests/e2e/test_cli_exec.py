"""`plugkit exec:*` end to end: the real CLI against a real runner in a temp PLUGKIT_HOME."""

import contextlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.fake_runner import FakeRunner
from tests.support.load import stretched
from tests.support.runner_home import ROOT, cli_argv, rpc

pytestmark = pytest.mark.e2e

STDIN_READER = str(ROOT / "tests" / "fixtures" / "stdin_reader.py")


def backgrounded_id(stderr: str) -> int:
    found = re.search(r"task_(\d+) is (still running|waiting for input)", stderr)
    assert found, stderr
    return int(found.group(1))


def listed(home, session: str, cwd: str | None = None) -> list[dict]:
    return rpc(home, "task.list", {"session_id": session, "cwd": cwd or os.getcwd()})["tasks"]


@contextlib.contextmanager
def follow(home, *args: str):
    """The CLI as a background child, stdout streamed line by line; reaped even if the test fails."""
    # stdin is no terminal, as for an agent: at a terminal Ctrl-C would stop the task.
    proc = subprocess.Popen(cli_argv() + list(args), env=home.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


# --- running code and exit codes -------------------------------------------------------------

def test_exec_auto_starts_the_runner_and_streams_both_outputs(home):
    assert home.runner_pids() == []
    result = home.cli("exec:bash", "echo out; echo err >&2; exit 3")
    assert result.returncode == 3, result.stderr
    assert result.stdout == "out\n" and re.fullmatch(r"err\n\[plugkit\] task_1 failed: exit 3 \(bash, .*\)\n",
                                                      result.stderr), result.stderr
    assert len(home.runner_pids()) == 1


@pytest.mark.parametrize("args, code, said", [
    (["exec:python", "print('hi')"], 0, ""),
    (["exec", "--lang", "python", "import sys; sys.exit(7)"], 7, ""),
    (["exec:bash", "--timeout", "0.3", "sleep 10"], 124, "timed out"),
    (["exec:bash", "kill -USR1 $$"], 128 + signal.SIGUSR1, "signal 10"),
    (["exec:cobol", "x"], 2, "unknown language 'cobol'"),
])
def test_exit_codes_follow_the_task(shared_home, args, code, said):
    result = shared_home.cli(*args)
    assert result.returncode == code, result.stderr
    assert said in result.stderr and "Traceback" not in result.stderr


def test_missing_interpreter_exits_127_with_the_fix(home):
    # The auto-started runner inherits this PATH, on which no node can be found.
    result = home.cli("exec:node", "console.log(1)", env={"PATH": "/nonexistent"})
    assert result.returncode == 127 and "cannot run node" in result.stderr and "to fix" in result.stderr


def test_unreachable_runner_exits_69(home):
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", home.port))
        squatter.listen()
        result = home.cli("exec:bash", "echo never")
    assert result.returncode == 69
    assert f"kill-port {home.port}" in result.stderr and "never" not in result.stdout


def test_code_from_file_dash_and_piped_stdin_with_the_bom_dropped(shared_home, tmp_path):
    script = tmp_path / "s.sh"
    script.write_bytes("\ufeffecho from-file\n".encode())
    assert shared_home.cli("exec:bash", "--file", str(script)).stdout == "from-file\n"
    assert shared_home.cli("exec:bash", "-", input="\ufeffecho from-dash").stdout == "from-dash\n"
    assert shared_home.cli("exec:bash", input="echo piped").stdout == "piped\n"
    assert shared_home.cli("exec:bash", "\ufeffecho argv-bom").stdout == "argv-bom\n"
    assert shared_home.cli("exec:bash", "echo", "several", "words").stdout == "several words\n"


@pytest.mark.parametrize("args, stdin, said", [
    (["exec:bash", ""], None, "the code is empty"),
    (["exec:bash", "\ufeff  \n"], None, "the code is empty"),
    (["exec:bash"], "   \n", "the code is empty"),
    (["exec:bash", "--file", "/no/such/file"], None, "cannot read --file"),
    (["exec:bash", "--file", "/etc/hostname", "echo"], None, "not both"),
    (["exec", "echo hi"], None, "name the language"),
    (["exec:bash", "--wait", "soon", "true"], None, "--wait must be a number"),
])
def test_bad_code_is_a_usage_error_before_any_runner_starts(home, args, stdin, said):
    result = home.cli(*args, input=stdin)
    assert result.returncode == 2 and said in result.stderr, result.stderr
    assert home.runner_pids() == []


def test_cwd_flag_is_resolved_where_the_user_typed_it(shared_home, tmp_path):
    (tmp_path / "sub").mkdir()
    result = shared_home.cli("exec:bash", "--cwd", "sub", "pwd", cwd=tmp_path)
    assert result.stdout.strip() == str((tmp_path / "sub").resolve())
    assert shared_home.cli("exec:bash", "pwd", cwd=tmp_path).stdout.strip() == str(tmp_path.resolve())


def test_json_reports_task_and_output(shared_home):
    doc = json.loads(shared_home.cli("exec:bash", "--json", "echo a; echo b >&2; exit 2").stdout)
    assert doc["exit_code"] == 2 and doc["running"] is False and doc["task"]["state"] == "failed"
    assert doc["output"] == [{"stream": "stdout", "text": "a\n"}, {"stream": "stderr", "text": "b\n"}]


# --- backgrounding and following ---------------------------------------------------------------

def test_background_then_sleep_until_text_status_and_close(shared_home, tmp_path):
    # "second" waits for the test's go-ahead, not for a time: on a loaded machine a 0.5 s sleep could
    # end inside the first answer, or "first" miss a 0.5 s wait.
    go = tmp_path / "go"
    first = shared_home.cli("exec:bash", "--wait", "3",
                            f"echo first; until [ -e {go} ]; do sleep 0.05; done; echo second; sleep 30")
    assert first.returncode == 0 and first.stdout == "first\n"
    tid = backgrounded_id(first.stderr)
    for follow_up in (f"plugkit exec:status task_{tid}", f"plugkit exec:sleep task_{tid} 30",
                      f"plugkit exec:close task_{tid}"):
        assert follow_up in first.stderr
    go.touch()
    woke = shared_home.cli("exec:sleep", f"task_{tid}", "30", "--until", "second")
    assert woke.returncode == 0 and woke.stdout == "second\n" and "running" in woke.stderr
    status = shared_home.cli("exec:status", str(tid))
    assert status.stdout == "" and f"task_{tid} running" in status.stderr
    closed = shared_home.cli("exec:close", f"task_{tid}")
    assert closed.returncode == 0 and "killed" in closed.stdout
    kept = shared_home.cli("exec:status", f"task_{tid}")  # the record stays: how it ended is still answerable
    assert f"task_{tid} killed" in kept.stderr, kept.stderr
    again = shared_home.cli("exec:close", f"task_{tid}")
    assert again.returncode == 0 and f"task_{tid} already closed" in again.stdout and "--forget" in again.stdout
    dropped = shared_home.cli("exec:close", f"task_{tid}", "--forget")
    assert dropped.returncode == 0 and "record is dropped" in dropped.stdout
    gone = shared_home.cli("exec:status", f"task_{tid}")
    assert gone.returncode == 1 and f"no task_{tid}" in gone.stderr


def test_sleep_to_the_end_exits_with_the_tasks_code(shared_home):
    started = shared_home.cli("exec:bash", "sleep 0.3; echo bye; exit 4", env={"PLUGKIT_WAIT": "0"})
    tid = backgrounded_id(started.stderr)
    ended = shared_home.cli("exec:sleep", f"task_{tid}", "10")
    assert ended.returncode == 4 and ended.stdout == "bye\n"
    assert f"task_{tid} failed: exit 4" in ended.stderr
    # Everything was read: a later status shows only the state.
    again = shared_home.cli("exec:status", f"task_{tid}", "--json")
    assert json.loads(again.stdout)["output"] == []


def test_sleep_that_runs_out_of_time_says_how_to_go_on(shared_home):
    tid = backgrounded_id(shared_home.cli("exec:bash", "--wait", "0", "sleep 30").stderr)
    result = shared_home.cli("exec:sleep", f"task_{tid}", "0.2", "--session", "s2")
    assert result.returncode == 1  # another session: not found
    result = shared_home.cli("exec:sleep", f"task_{tid}", "0.2")
    assert result.returncode == 0 and "still running after 0.2s" in result.stderr
    assert shared_home.cli("exec:close", f"task_{tid}").returncode == 0


def test_type_feeds_stdin_line_by_line_then_eof(shared_home):
    started = shared_home.cli("exec:python", "--stdin", "--wait", "0.3", "--file", STDIN_READER)
    tid = backgrounded_id(started.stderr)
    assert shared_home.cli("exec:type", f"task_{tid}", "hello", "world").returncode == 0
    seen = shared_home.cli("exec:sleep", f"task_{tid}", "10", "--until", "got: hello world")
    # exec:python runs `python3 -u`: print() writes its text and its newline apart, and --until answers
    # as soon as the text is seen, so the newline may come with the next read (seen beside CPU hogs).
    assert seen.stdout in ("got: hello world\n", "got: hello world"), seen.stderr
    assert shared_home.cli("exec:type", f"task_{tid}", "ab", "--no-newline").returncode == 0
    sent = shared_home.cli("exec:type", f"task_{tid}", "c", "--eof")
    assert "stdin is now closed" in sent.stdout
    ended = shared_home.cli("exec:sleep", f"task_{tid}", "10")
    assert ended.returncode == 0 and seen.stdout + ended.stdout == "got: hello world\ngot: abc\neof\n"
    late = shared_home.cli("exec:type", f"task_{tid}", "more")
    assert late.returncode == 1 and "takes no more input" in late.stderr


def test_two_sessions_in_one_cwd_do_not_see_each_other(home):
    tid = backgrounded_id(home.cli("exec:bash", "--session", "a", "--wait", "0", "sleep 30").stderr)
    mine = json.loads(home.cli("exec:tasks", "--json", env={"PLUGKIT_SESSION": "a"}).stdout)
    assert [t["task_id"] for t in mine["tasks"]] == [tid]
    theirs = home.cli("exec:tasks", "--session", "b")
    assert theirs.stdout.startswith("no tasks in session 'b'")
    default = json.loads(home.cli("exec:tasks", "--json").stdout)
    assert default["tasks"] == [] and default["session_id"].startswith("cwd-")
    for verb in (["exec:status", str(tid)], ["exec:close", str(tid)], ["exec:type", str(tid), "x"]):
        refused = home.cli(*verb, "--session", "b")
        assert refused.returncode == 1 and f"no task_{tid}" in refused.stderr and "'b'" in refused.stderr
    table = home.cli("exec:tasks", "--session", "a").stdout
    assert f"task_{tid}" in table and "running" in table
    assert home.cli("exec:close", str(tid), "--session", "a").returncode == 0


def test_large_output_shows_head_and_tail_and_the_rest_on_request(shared_home):
    env = {"PLUGKIT_MAX_OUTPUT": "400"}
    result = shared_home.cli("exec:python", "for i in range(1000): print(f'line {i:04d}')", env=env)
    assert result.returncode == 0
    assert result.stdout.startswith("line 0000\n") and result.stdout.endswith("line 0999\n")
    assert len(result.stdout) <= 420
    tid = re.search(r"exec:status task_(\d+) --from", result.stderr)
    assert tid and "not shown" in result.stderr, result.stderr
    rest = shared_home.cli("exec:status", f"task_{tid.group(1)}", "--full")
    lines = rest.stdout.splitlines()
    assert "line 0500" in lines and lines[-1] == "line 0999"
    assert len(result.stdout.splitlines()) + len(lines) >= 1000


def test_status_of_a_finished_task_and_both_id_forms(shared_home):
    tid = json.loads(shared_home.cli("exec:bash", "--json", "echo done").stdout)["task"]["task_id"]
    for ref in (f"task_{tid}", str(tid)):
        status = shared_home.cli("exec:status", ref)
        assert status.returncode == 0 and f"task_{tid} completed: exit 0" in status.stderr
    bad = shared_home.cli("exec:status", "task_x")
    assert bad.returncode == 2 and "task_N or N" in bad.stderr


# --- interruptions and failures -----------------------------------------------------------------

@pytest.mark.parametrize("kill", [False, True])
def test_ctrl_c_leaves_the_task_running_unless_asked(home, kill):
    args = ["exec:bash", "--session", "s", "--wait", "30", "echo started; sleep 30"]
    with follow(home, *args, *(["--kill-on-interrupt"] if kill else [])) as proc:
        assert proc.stdout.readline() == "started\n"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=15)
    assert proc.returncode == 130 and "Traceback" not in err
    (task,) = listed(home, "s")
    if kill:
        assert task["state"] == "killed" and "killed" in err
    else:
        assert task["state"] == "running"
        assert f"plugkit exec:close task_{task['task_id']} --session s" in err
        assert home.cli("exec:close", str(task["task_id"]), "--session", "s").returncode == 0


def test_runner_dying_mid_call_names_the_task_and_the_next_command(home):
    with follow(home, "exec:bash", "--session", "s", "--wait", "30", "echo started; sleep 30") as proc:
        assert proc.stdout.readline() == "started\n"
        (task,) = listed(home, "s")
        os.kill(home.discovery()["pid"], signal.SIGKILL)
        try:
            _, err = proc.communicate(timeout=15)
        finally:
            os.killpg(task["pid"], signal.SIGKILL)  # the runner can no longer end its task
    assert proc.returncode == 69, err
    assert f"task_{task['task_id']}" in err and "plugkit runner status" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2


def test_broken_pipe_ends_quietly_promptly_and_kills_the_task(home):
    assert home.cli("runner", "start").returncode == 0
    plugkit = " ".join(shlex.quote(a) for a in cli_argv())
    began = time.monotonic()
    result = subprocess.run(["bash", "-c", f"set -o pipefail; {plugkit} exec:bash --session p yes | head -1"],
                            env=home.env, capture_output=True, text=True, timeout=30)
    took = time.monotonic() - began
    assert result.stdout == "y\n"
    assert result.returncode == 141 and "Traceback" not in result.stderr and "Error" not in result.stderr
    assert took < stretched(5), took  # `yes` is not left to fill the pipe until some timeout
    (task,) = listed(home, "p")
    assert task["state"] == "killed"


def test_stale_port_file_never_gets_the_token_and_exec_starts_a_real_runner(home):
    fake = FakeRunner(pid=1)
    fake.start()
    try:
        home.path.mkdir(mode=0o700)
        (home.path / "port").write_text(json.dumps({"port": fake.port, "pid": os.getpid()}))
        Path(home.path / "token").write_text("not-a-secret")
        os.chmod(home.path / "token", 0o600)
        result = home.cli("exec:bash", "echo real")
        assert result.returncode == 0 and result.stdout == "real\n", result.stderr
        assert b"Authorization" not in fake.seen
        assert home.discovery()["port"] == home.port
    finally:
        fake.sock.close()


def test_python_code_imports_from_its_cwd_and_a_traceback_names_exec_python(shared_home, tmp_path):
    (tmp_path / "mymod.py").write_text("X = 42\n")
    done = shared_home.cli("exec:python", "import mymod, sys; print(mymod.X, repr(sys.path[0]), __name__)", cwd=str(tmp_path))
    assert done.returncode == 0 and done.stdout == "42 '' __main__\n", done.stderr  # as `python -c` would
    failed = shared_home.cli("exec:python", "def f():\n    1/0\nf()", cwd=str(tmp_path))
    assert failed.returncode == 1
    assert 'File "<exec:python>", line 2, in f\n    1/0' in failed.stderr, failed.stderr
    assert "plugkit-tasks" not in failed.stderr and "_plugkit_run" not in failed.stderr
