"""Cursor's hooks end to end without Cursor (it has no CLI that installs here): its documented
payloads through the real `plugkit hook ... --platform cursor` against a real runner, as
Cursor would call it, answered in Cursor's fields."""

import json
import subprocess

import pytest

from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e
CONVERSATION = "c7d1a0e2-5b4f-4e61-9c3a-2f8e1d0b6a55"


def cursor(home, event: str, work, **fields) -> dict:
    stdin = {"conversation_id": CONVERSATION, "generation_id": "g-1", "hook_event_name": event,
             "cursor_version": "2.1.0", "workspace_roots": [str(work)], **fields}
    done = subprocess.run(cli_argv() + ["hook", event, "--platform", "cursor"], input=json.dumps(stdin).encode(),
                          capture_output=True, env=home.env, timeout=90)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def work(tmp_path):
    path = tmp_path / "work"
    path.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    return path


def test_exec_runs_in_the_runner_and_the_agent_reads_its_output(home, work):
    started = cursor(home, "sessionStart", work, session_id=CONVERSATION)
    assert "plugkit: to run code" in started["additional_context"]
    said = cursor(home, "beforeShellExecution", work, command="exec:python\nprint(6*7)", cwd=str(work))
    assert said["permission"] == "deny" and "42" in said["agent_message"] and "ran as task_" in said["agent_message"]
    plain = cursor(home, "beforeShellExecution", work, command="ls", cwd=str(work))
    assert plain == {}


def test_enforced_gates_refuse_a_write_and_turn_back_one_stop(home, work):
    (work / ".plugkit").mkdir()
    (work / ".plugkit" / "config.toml").write_text('gates = "enforce"\n')
    added = subprocess.run(cli_argv() + ["prd", "add", "ship the feature"], cwd=work, env=home.env,
                           capture_output=True, text=True, timeout=60)
    assert added.returncode == 0, added.stderr
    cursor(home, "sessionStart", work, session_id=CONVERSATION)
    write = cursor(home, "preToolUse", work, tool_name="Write", cwd=str(work),
                   tool_input={"file_path": str(work / "a.py"), "contents": "x = 1\n"})
    assert write["permission"] == "deny" and "PLAN" in write["agent_message"]
    first = cursor(home, "stop", work, status="completed", loop_count=0)
    assert "not done yet" in first["followup_message"]
    # Cursor's next stop of the same turn (loop_count 1) with the same reason ends it: no loop.
    assert cursor(home, "stop", work, status="completed", loop_count=1) == {}
