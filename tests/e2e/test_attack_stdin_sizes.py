"""Piped or redirected stdin whose JSON is larger than its bytes (control characters, NULs: six
bytes each on the wire) reaches the task whole, and a request over the runner's body limit is
named as that, never as a runner to restart. Before: a 2 MB file of NULs printed nothing and
exited 0 while the task waited for input (the first piece was refused with HTTP 413 and the
client swallowed it); 200 KB of them said `runner refused task.exec (HTTP 413); try
plugkit runner restart` with exit 69. Real CLI, real runner."""

import hashlib
import subprocess

import pytest

from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e
CODE = ("import hashlib, sys\ndata = sys.stdin.buffer.read()\n"
        "print(len(data), hashlib.sha256(data).hexdigest())")
HOST_MARKERS = ("CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "QWEN_CODE", "GEMINI_CLI", "CODEX_THREAD_ID",
                "CODEX_SESSION_ID", "COPILOT_CLI", "COPILOT_AGENT_SESSION_ID", "OPENCODE", "OPENCODE_PID",
                "KILO", "KILO_PID")


def env_of(home, **more: str) -> dict:
    """The home's environment with no agent host's marker (the suite may itself run under one)."""
    return {**{k: v for k, v in home.env.items() if k not in HOST_MARKERS}, **more}


@pytest.mark.parametrize("size", [200_000, 2_000_000])
def test_a_redirected_file_of_control_characters_arrives_whole(home, tmp_path, size):
    data = bytes(range(32)) * (size // 32)
    path = tmp_path / "in.bin"
    path.write_bytes(data)
    with open(path, "rb") as fh:
        done = subprocess.run(cli_argv() + ["exec:python", CODE], stdin=fh, capture_output=True, env=env_of(home),
                              cwd=str(tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == [str(len(data)), hashlib.sha256(data).hexdigest()], done.stderr


def test_a_pipe_of_nuls_arrives_whole(home, tmp_path):
    data = b"\0" * 3_000_000
    done = subprocess.run(cli_argv() + ["exec:python", CODE], input=data, capture_output=True, env=env_of(home),
                          cwd=str(tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == [str(len(data)), hashlib.sha256(data).hexdigest()], done.stderr


def test_code_over_the_body_limit_is_named_as_that_not_as_a_runner_to_restart(home, tmp_path):
    code = tmp_path / "big.py"
    code.write_text("# " + "\x01" * 400_000 + "\nprint('ran')\n")  # 400 KB, 2.4 MB on the wire
    done = home.cli("exec:python", "--file", str(code), cwd=str(tmp_path))
    assert done.returncode not in (0, 69) and "restart" not in done.stderr, done.stderr
    assert "PLUGKIT_MAX_BODY_BYTES" in done.stderr and len(done.stderr.strip().splitlines()) <= 2, done.stderr


def test_input_the_runner_refuses_mid_stream_is_an_error_not_an_exit_0(home, tmp_path):
    """A runner whose body limit is lowered refuses a 64 K piece of NULs: exec says the input
    was cut short, names how to end the task, and exits non-zero (it printed nothing, exit 0)."""
    env = env_of(home, PLUGKIT_MAX_BODY_BYTES="200000")
    proc = subprocess.Popen(cli_argv() + ["exec:python", "--wait", "30", CODE], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(tmp_path))
    try:
        out, err = proc.communicate(b"\0" * 1_000_000, timeout=120)
    except BrokenPipeError:  # exec stopped reading our pipe once its input was refused
        out, err = proc.communicate(timeout=120)
    text = err.decode()
    assert proc.returncode == 1, (proc.returncode, out, text)
    assert "stdin was cut short" in text and "PLUGKIT_MAX_BODY_BYTES" in text and "exec:close task_" in text, text
    home.cli("session-cleanup", cwd=str(tmp_path), env=env)
