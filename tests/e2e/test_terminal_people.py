"""People at a terminal (issue 30, item 6): Ctrl-C typed into a real pty stops a foreground
exec's task (as `docker run` does) while an agent's (stdin not a terminal) keeps running; a
mistyped verb, language or option gets a suggestion; a bare Go body runs like a bare Java
one; help, README and the top-level usage name the same platforms."""

import os
import re
import shutil
import subprocess

import pytest

from tests.support.runner_home import ROOT, cli_argv, rpc
from tests.support.terminal import _controlling_tty, _read_until

pytestmark = pytest.mark.e2e



def test_ctrl_c_in_a_terminal_stops_the_task(shared_home, tmp_path):
    master, slave = os.openpty()
    proc = subprocess.Popen(cli_argv() + ["exec:bash", "--session", "tty", "--wait", "30", "echo started; sleep 60"],
                            env=shared_home.env, cwd=str(tmp_path), stdin=slave, stdout=slave, stderr=slave,
                            preexec_fn=_controlling_tty)
    os.close(slave)
    try:
        assert b"started" in _read_until(master, b"started")
        os.write(master, b"\x03")  # the terminal's line discipline turns it into SIGINT
        said = _read_until(master, b"interrupted")
        assert proc.wait(timeout=15) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    (task,) = rpc(shared_home, "task.list", {"session_id": "tty", "cwd": str(tmp_path)})["tasks"]
    assert task["state"] == "killed", said
    assert b"interrupted; task_" in said


def test_ctrl_c_from_an_agent_leaves_the_task_running(shared_home, tmp_path):
    proc = subprocess.Popen(cli_argv() + ["exec:bash", "--session", "agent", "--wait", "30", "echo started; sleep 60"],
                            env=shared_home.env, cwd=str(tmp_path), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "started\n"
        proc.send_signal(2)
        _, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    (task,) = rpc(shared_home, "task.list", {"session_id": "agent", "cwd": str(tmp_path)})["tasks"]
    assert proc.returncode == 130 and task["state"] == "running", err
    shared_home.cli("exec:close", str(task["task_id"]), "--session", "agent", cwd=str(tmp_path))


@pytest.mark.parametrize("argv, hint", [
    (["exec:stauts", "task_1"], "did you mean exec:status?"),
    (["exec:sleeep", "task_1"], "did you mean exec:sleep?"),
    (["dcotor"], "did you mean doctor?"),
    # The word an agent reaches for, when plugkit's verb has another name.
    (["exec:input", "task_1", "y"], "did you mean exec:type?"),
    (["exec:ps"], "did you mean exec:tasks?"),
    # Another verb's option: whose it is, never "did you mean" the very word given.
    (["runner", "stop", "--force"], "--force is not an option here; `plugkit runner restart` takes it"),
    (["exec:logs", "task_1"], "did you mean exec:status?"),
    (["exec:sleep", "task_1", "abc"], "the wait (seconds, after TASK) must be a number, not 'abc'"),
    (["exec:status", "task_1", "--ful"], "did you mean --full?"),
])
def test_a_typo_gets_a_suggestion_without_a_runner(home, argv, hint):
    result = home.cli(*argv)
    assert result.returncode == 2 and hint in result.stderr, result.stderr
    assert home.runner_pids() == []


def test_a_language_typo_gets_a_suggestion(home, tmp_path):
    result = home.cli("exec:pyhton", "print(1)", cwd=str(tmp_path))
    assert result.returncode == 2 and "did you mean python?" in result.stderr, result.stderr


@pytest.mark.skipif(shutil.which("go") is None, reason="no go toolchain")
def test_a_bare_go_body_runs_like_a_bare_java_body(shared_home, tmp_path):
    body = 'import (\n\t"fmt"\n\t"strings"\n)\nfmt.Println(strings.ToUpper("hi from go"))\n'
    result = shared_home.cli("exec:go", body, cwd=str(tmp_path), timeout=120)
    assert result.returncode == 0 and result.stdout == "HI FROM GO\n", result.stderr
    broken = shared_home.cli("exec:go", 'import "fmt"\nfmt.Println(1)\nnope()\n', cwd=str(tmp_path), timeout=120)
    assert broken.returncode != 0 and re.search(r"main\.go:3:\d+: undefined: nope", broken.stderr), broken.stderr


def test_help_readme_and_usage_name_the_same_platforms(home):
    from client.hooks.core import PLATFORMS

    usage = home.cli("help").stdout
    install = home.cli("install", "--help").stdout + home.cli("install", "--help").stderr
    readme = (ROOT / "README.md").read_text()
    for name in PLATFORMS:
        assert name in usage, name
        assert name in install, name
        assert f"`{name}`" in readme or name in readme.split("--platform", 1)[1][:400], name


def test_readme_names_every_environment_variable_the_code_reads():
    code = ""
    for part in ("client", "runner", "plugkit"):
        for path in (ROOT / part).rglob("*.py"):
            code += path.read_text()
    # PLUGKIT_TOKEN* are names the runner strips from tasks' environments, not settings.
    # PLUGKIT_HANDOVER is set by the runner in its own in-place exec (runner/boot/handover.py).
    read = {v for v in re.findall(r"PLUGKIT_[A-Z][A-Z0-9_]*[A-Z0-9]", code)
            if not v.startswith("PLUGKIT_TOKEN") and v != "PLUGKIT_HANDOVER"}
    readme = (ROOT / "README.md").read_text()
    from plugkit.config import Limits

    read |= {f"PLUGKIT_{name.upper()}" for name in Limits.__dataclass_fields__}
    missing = sorted(v for v in read if f"`{v}`" not in readme)
    assert not missing, missing


def _running_task(home, tmp_path) -> int:
    assert home.cli("runner", "start").returncode == 0
    return rpc(home, "task.exec", {"session_id": "srv", "cwd": str(tmp_path), "lang": "bash",
                                   "code": "sleep 60", "wait_ms": 0})["task"]["task_id"]


def test_restart_keeps_running_tasks_and_only_force_kills_them(home, tmp_path):
    # Nothing to ask any more: a restart in place keeps the task; --force stops and starts,
    # killing it and naming it.
    task = _running_task(home, tmp_path)
    ref = {"session_id": "srv", "cwd": str(tmp_path), "task_id": task}
    kept = home.cli("runner", "restart")
    assert kept.returncode == 0 and f"kept running: task_{task}" in kept.stdout, kept
    assert rpc(home, "task.status", ref)["state"] == "running"
    forced = home.cli("runner", "restart", "--force")
    assert forced.returncode == 0 and f"task_{task}" in forced.stdout  # the stop names what it killed
    assert rpc(home, "task.status", ref)["state"] == "killed"


@pytest.mark.parametrize("argv", [["work", "logs", "w1"], ["work", "stop"], ["work", "rollback", "w1"]])
def test_an_error_that_names_its_next_command_gets_no_second_hint(shared_home, tmp_path, argv):
    result = shared_home.cli(*argv, cwd=str(tmp_path))
    assert result.returncode != 0 and "no plugkit work run" in result.stderr, result
    assert result.stderr.count("`plugkit ") == 1 and "next:" not in result.stderr, result.stderr
