"""Tasks run in the caller's environment (issue 30.2): the CLI and the hook send theirs with
task.exec; the task gets it minus plugkit's own token and tags; a language's program is found on
the caller's PATH, so an activated venv's python runs; `exec --explain` and `doctor` say which.
The runner is started first, from another environment, so nothing here reaches the task by
inheritance: only what the caller sends."""

import json
import os
import subprocess
import sys

import pytest

from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e


@pytest.fixture
def runner(home):
    """A runner whose own environment has none of what the tests set."""
    assert home.cli("runner", "start").returncode == 0
    return home


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A real venv (no pip: fast), activated the way `source bin/activate` does it."""
    path = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    return path


def activated(venv) -> dict:
    return {"VIRTUAL_ENV": str(venv), "PATH": f"{venv}/bin:{os.environ.get('PATH', os.defpath)}"}


def test_an_exported_variable_reaches_the_task(runner, tmp_path):
    done = runner.cli("exec:bash", 'echo "[$MY_PROJECT_VAR]"', cwd=str(tmp_path), env={"MY_PROJECT_VAR": "yes"})
    assert done.stdout.strip() == "[yes]", done.stderr


def test_a_program_on_the_callers_path_runs(runner, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "project-tool"
    tool.write_text("#!/bin/sh\necho tool ran\n")
    tool.chmod(0o755)
    path = f"{bin_dir}:{os.environ.get('PATH', os.defpath)}"
    done = runner.cli("exec:bash", "project-tool", cwd=str(tmp_path), env={"PATH": path})
    assert done.stdout.strip() == "tool ran", done.stdout + done.stderr


def test_exec_python_runs_the_activated_venvs_interpreter(runner, tmp_path, venv):
    done = runner.cli("exec:python", "import sys; print(sys.prefix)", cwd=str(tmp_path), env=activated(venv))
    assert done.stdout.strip() == str(venv), done.stdout + done.stderr


def test_virtual_env_alone_is_honoured(runner, tmp_path, venv):
    done = runner.cli("exec:python", "import sys; print(sys.prefix)", cwd=str(tmp_path),
                      env={"VIRTUAL_ENV": str(venv)})
    assert done.stdout.strip() == str(venv), done.stdout + done.stderr


def test_plugkits_secrets_and_tags_are_the_runners_not_the_callers(runner, tmp_path):
    forged = {"PLUGKIT_TOKEN": "stolen", "PLUGKIT_TOKEN_FILE": "/x", "PLUGKIT_TASK_ID": "999",
              "PLUGKIT_RUNNER_ID": "forged", "PLUGKIT_SESSION_ID": "forged", "PLUGKIT_HOME_ID": "forged"}
    code = 'echo "tok=[$PLUGKIT_TOKEN$PLUGKIT_TOKEN_FILE] home=[$PLUGKIT_HOME] id=$PLUGKIT_TASK_ID run=$PLUGKIT_RUNNER_ID"'
    done = runner.cli("exec:bash", "--json", code, cwd=str(tmp_path), env=forged)
    doc = json.loads(done.stdout)
    out = "".join(c["text"] for c in doc["output"])
    assert "tok=[] home=[]" in out and f"id={doc['task']['task_id']} " in out
    assert "run=forged" not in out and "id=999" not in out


def test_the_hook_sends_the_hosts_environment(runner, tmp_path):
    event = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "PreToolUse", "tool_name": "Bash",
             "tool_input": {"command": 'exec:bash\necho "[$FROM_HOST]"'}}
    done = subprocess.run(cli_argv() + ["hook", "PreToolUse", "--platform", "claude-code"],
                          input=json.dumps(event).encode(), capture_output=True, timeout=60,
                          env={**runner.env, "FROM_HOST": "host-value"})
    assert "[host-value]" in json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]


def test_explain_and_doctor_name_the_program_that_would_run(home, tmp_path, venv):
    done = home.cli("exec:python", "--explain", cwd=str(tmp_path), env=activated(venv))
    assert done.returncode == 0, done.stderr
    assert f"{venv}/bin/python -u -c <launcher: runs FILE as python -c would> FILE" in done.stdout
    assert "from $VIRTUAL_ENV" in done.stdout
    doctor = home.cli("doctor", "--json", cwd=str(tmp_path), env=activated(venv))
    rows = {r["check"]: r for r in json.loads(doctor.stdout)}
    assert f"{venv}/bin/python" in rows["python"]["detail"] and "$VIRTUAL_ENV" in rows["python"]["detail"]
    assert home.runner_pids() == []  # --explain and doctor start no runner
