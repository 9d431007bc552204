"""`exec`'s own stdin is the task's (issue 42, major 1): `echo data | plugkit exec:python ...`
printed nothing, exit 0, while the task waited for input. Through the real CLI and runner: a
pipe, a file redirect bigger than one request, /dev/null, a pipe written while the task
runs, a pipe nobody ever writes or closes (an agent's shell: never a hang), --no-stdin and
--stdin, the README's `-` example, and a person's pseudo-terminal (typed lines reach the
task) against an agent host's one (Qwen Code's shell runs on a pty nobody types into)."""

import hashlib
import os
import re
import subprocess

import pytest

from tests.support.load import stretched
from tests.support.terminal import _controlling_tty, _read_until
from tests.support.runner_home import ROOT, cli_argv

pytestmark = pytest.mark.e2e

READ_ALL = "import sys; data = sys.stdin.buffer.read(); print(len(data), hashlib.sha256(data).hexdigest())"
ECHO_LINES = str(ROOT / "tests" / "fixtures" / "stdin_reader.py")
HOST_MARKERS = ("CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "QWEN_CODE", "GEMINI_CLI", "CODEX_THREAD_ID",
                "CODEX_SESSION_ID", "COPILOT_CLI", "COPILOT_AGENT_SESSION_ID", "OPENCODE", "OPENCODE_PID",
                "KILO", "KILO_PID")


def env_of(home, **more: str) -> dict:
    """The home's environment with no agent host's marker (the suite may itself run under one)."""
    return {**{k: v for k, v in home.env.items() if k not in HOST_MARKERS}, **more}


def run(home, args: list[str], stdin, tmp_path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(cli_argv() + args, stdin=stdin, capture_output=True, env=env_of(home), cwd=str(tmp_path),
                          timeout=timeout)


def waiting_id(text: str) -> int:
    found = re.search(r"task_(\d+) is waiting for input", text)
    assert found, text
    return int(found.group(1))


def test_piped_data_is_the_tasks_stdin(shared_home, tmp_path):
    done = subprocess.run(cli_argv() + ["exec:python", "import sys; print(repr(sys.stdin.read()))"], input=b"data\n",
                          capture_output=True, env=env_of(shared_home), cwd=str(tmp_path), timeout=60)
    assert done.returncode == 0 and done.stdout == b"'data\\n'\n", done.stderr


def test_a_redirected_file_bigger_than_one_request_arrives_whole(shared_home, tmp_path):
    blob = os.urandom(600_000).hex().encode() + b"\n"  # 1.2 MB of text: read ahead, then streamed
    (tmp_path / "in.txt").write_bytes(blob)
    with open(tmp_path / "in.txt", "rb") as fh:
        done = run(shared_home, ["exec:python", "import hashlib\n" + READ_ALL], fh, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == [str(len(blob)), hashlib.sha256(blob).hexdigest()]


def test_dev_null_is_end_of_file_at_once(shared_home, tmp_path):
    done = run(shared_home, ["exec:python", "--wait", "60", "print(repr(input('x? ')))"], subprocess.DEVNULL, tmp_path)
    assert done.returncode == 1 and b"EOFError" in done.stderr and b"waiting for input" not in done.stderr


def test_a_pipe_written_while_the_task_runs_is_streamed_line_by_line(shared_home, tmp_path):
    proc = subprocess.Popen(cli_argv() + ["exec:python", "--wait", "60", "--file", ECHO_LINES], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_of(shared_home), cwd=str(tmp_path))
    try:
        proc.stdin.write(b"one\n")
        proc.stdin.flush()
        # The task answered the first line before the second was written: streamed, not slurped.
        assert proc.stdout.readline() == b"got: one\n"
        out, err = proc.communicate(b"two\n", timeout=60)  # the rest, then end-of-file
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0 and out == b"got: two\neof\n", err


def test_a_pipe_nobody_writes_never_holds_an_exec_that_does_not_read_it(shared_home, tmp_path):
    # An agent's shell may leave stdin a pipe it never writes nor closes.
    read_fd, write_fd = os.pipe()
    try:
        done = run(shared_home, ["exec:python", "print(6 * 7)"], read_fd, tmp_path)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert done.returncode == 0 and done.stdout == b"42\n", done.stderr


def test_a_reader_of_a_silent_open_pipe_is_reported_waiting_at_the_ceiling(shared_home, tmp_path):
    # The pipe may yet be written (a slow producer): the task is said waiting only at the
    # wait ceiling, with exec:type, never held past it. The ceiling is stretched on a busy
    # machine: beside CPU hogs the task's python had not reached its read at 6 s ("still running").
    read_fd, write_fd = os.pipe()  # kept open and silent for the whole call
    try:
        ceiling = f"{stretched(6):.0f}"
        done = run(shared_home, ["exec:python", "--wait", ceiling, "import sys; print(len(sys.stdin.read()))"], read_fd,
                   tmp_path, timeout=60 + float(ceiling))
    finally:
        os.close(read_fd)
    try:
        tid = waiting_id(done.stderr.decode())
        assert done.returncode == 0
    finally:
        os.close(write_fd)
    shared_home.cli("exec:close", f"task_{tid}", cwd=str(tmp_path))


def test_no_stdin_ignores_the_pipe_and_stdin_keeps_it_open_for_exec_type(shared_home, tmp_path):
    closed = subprocess.run(cli_argv() + ["exec:python", "--no-stdin", "import sys; print(repr(sys.stdin.read()))"],
                            input=b"data\n", capture_output=True, env=env_of(shared_home), cwd=str(tmp_path), timeout=60)
    assert closed.returncode == 0 and closed.stdout == b"''\n", closed.stderr
    kept = subprocess.run(cli_argv() + ["exec:python", "--stdin", "--wait", "60", "--file", ECHO_LINES],
                          input=b"not for the task\n", capture_output=True, env=env_of(shared_home), cwd=str(tmp_path),
                          timeout=60)
    tid = waiting_id(kept.stderr.decode())
    assert kept.returncode == 0 and b"not for the task" not in kept.stdout
    assert shared_home.cli("exec:type", f"task_{tid}", "typed", "--eof", cwd=str(tmp_path)).returncode == 0
    ended = shared_home.cli("exec:sleep", f"task_{tid}", "30", cwd=str(tmp_path))
    assert ended.stdout == "got: typed\neof\n", ended.stderr


def test_a_reader_that_stops_early_ends_the_exec(shared_home, tmp_path):
    yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
    try:
        done = run(shared_home, ["exec:bash", "head -2"], yes.stdout, tmp_path)
    finally:
        yes.kill()
        yes.wait()
        yes.stdout.close()
    assert done.returncode == 0 and done.stdout == b"y\ny\n", done.stderr


def test_the_readmes_code_from_stdin_example_runs(shared_home, tmp_path):
    line = next(line for line in (ROOT / "README.md").read_text().splitlines() if "# code from stdin" in line)
    command = line.split("#")[0].strip()
    bin_dir = os.path.dirname(cli_argv()[0])
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=str(tmp_path), timeout=60,
                          env=env_of(shared_home, PATH=f"{bin_dir}:{os.environ['PATH']}"), stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and done.stdout.strip(), (command, done.stdout, done.stderr)


def _at_a_terminal(home, tmp_path, env: dict, code: str):
    master, slave = os.openpty()
    proc = subprocess.Popen(cli_argv() + ["exec:python", "--wait", "60", code], env=env, cwd=str(tmp_path),
                            stdin=slave, stdout=slave, stderr=slave, preexec_fn=_controlling_tty)
    os.close(slave)
    return proc, master


PROMPTED = "print('ready', flush=True); print('got', input())"


def test_at_a_persons_terminal_typed_lines_reach_the_task(shared_home, tmp_path):
    proc, master = _at_a_terminal(shared_home, tmp_path, env_of(shared_home), PROMPTED)
    try:
        assert b"ready" in _read_until(master, b"ready")
        os.write(master, b"typed here\n")
        said = _read_until(master, b"got typed here")
        assert proc.wait(timeout=30) == 0, said
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    assert b"got typed here" in said and b"waiting for input" not in said


def test_an_agent_hosts_terminal_is_not_read(shared_home, tmp_path):
    # Qwen Code runs its shell tool on a pseudo-terminal nobody types into (QWEN_CODE set).
    proc, master = _at_a_terminal(shared_home, tmp_path, env_of(shared_home, QWEN_CODE="1"), PROMPTED)
    try:
        said = _read_until(master, b"or --eof")
        assert proc.wait(timeout=30) == 0, said
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    tid = waiting_id(said.decode(errors="replace"))
    assert b"after 60s" not in said  # said at once, not at the wait ceiling
    shared_home.cli("exec:close", f"task_{tid}", cwd=str(tmp_path))
