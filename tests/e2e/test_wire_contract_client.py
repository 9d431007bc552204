"""What the client puts on the wire, checked against the runner's models: every verb is driven
through the real CLI against a real runner, every (method, params) it sends is recorded and
validated with that method's pydantic model, and every method the client names is exercised."""

import json
import pathlib
import subprocess
import sys

import pytest

from tests.support.runner_home import free_port
from tests.support.wire_models import client_method_literals, methods

pytestmark = pytest.mark.e2e
ROOT = pathlib.Path(__file__).resolve().parents[2]


def claude(event: str, cwd: pathlib.Path, **more) -> dict:
    return {"session_id": "wire-hooks", "cwd": str(cwd), "hook_event_name": event, **more}


def test_every_call_a_client_verb_sends_fits_its_model(home, tmp_path):
    log = tmp_path / "calls.jsonl"
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "app.py").write_text("print('hi')\n")
    env = {**home.env, "PLUGKIT_TEST_CALLS": str(log), "PYTHONPATH": str(ROOT), "PLUGKIT_SESSION": "wire"}

    def cli(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "tests.support.recording_cli", *argv], cwd=work, env=env,
                              input=stdin, capture_output=True, text=True, timeout=90)
        # Refusals are fine here (exit 1: unmet, not found); usage errors (2) or internals are not.
        # 3: `work status --wait` on a run that halted (its exit codes are `work --wait`'s).
        assert done.returncode in (0, 1, 3) and "internal error" not in done.stderr, (argv, done.stderr)
        return done

    cli("exec:bash", "echo hello")  # task.exec, and the follow-up reads
    cli("exec:bash", "--stdin", "--wait", "0.2", "--name", "wire", "echo started; sleep 30")  # task_2, stdin open
    cli("exec:status", "task_2")
    cli("exec:status", "task_2", "--grep", "start")
    cli("exec:sleep", "task_2", "0.3", "--until", "never printed")
    cli("exec:type", "task_2", "some input")
    cli("exec:tasks")
    cli("exec:close", "task_2")
    cli("session-cleanup")
    cli("serial", "list")
    cli("kill-port", str(free_port()))
    cli("runner", "status")
    cli("gate", "status")
    cli("gate", "context")
    cli("gate", "restore")
    cli("gate", "confirm-config")
    cli("gate", "advance", "EXECUTE")
    cli("gate", "emit", "app.py")
    cli("gate", "retreat", "replan", "wire", "check")
    cli("gate", "verify", "--wait", "0.1")
    cli("mutable", "add", "greeting", "--expected", "hello")
    cli("mutable", "resolve", "greeting", "task_1", "--line", "1")
    cli("mutable", "list")
    cli("prd", "add", "wire item", "--risk", "critical", "--acceptance", "it works")
    cli("prd", "update", "w1", "--status", "in_progress", "--blocked-by", "")
    cli("prd", "list")
    cli("prd", "ready", "--limit", "3")
    cli("prd", "verify", "w1")  # no check anywhere: refused, but sent
    cli("evidence", "add", "--task", "task_1", "--subject", "w1")
    cli("evidence", "add", "--task", "last", "--subject", "w1")  # task.last
    added = cli("evidence", "add", "--file", "app.py", "--json")
    assert added.returncode == 0, added.stderr
    cli("evidence", "list")
    cli("evidence", "show", json.loads(added.stdout)["id"])
    cli("evidence", "verify")
    cli("approve", "w1")
    cli("approve", "--list")
    cli("memory", "add", "--type", "reference", "--name", "wire", "The app is app.py.")
    cli("memory", "list")
    cli("memory", "show", "wire")
    cli("memory", "search", "app")
    cli("memory", "index")
    cli("memory", "forget", "wire")
    cli("search", "app", "--path", "*.py", "--lang", "python", "--limit", "3", "--history")
    cli("search", "--status")
    cli("digest")
    for event, more in (("SessionStart", {"source": "startup"}), ("UserPromptSubmit", {"prompt": "hi"}),
                        ("PreToolUse", {"tool_name": "Edit", "tool_input": {"file_path": "app.py"}}),
                        ("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "exec:bash\necho hook"}}),
                        ("Stop", {"stop_hook_active": False}), ("SessionEnd", {"reason": "exit"})):
        cli("hook", event, "--platform", "claude-code", stdin=json.dumps(claude(event, work, **more)))
    cli("prd", "update", "w1", "--verify", "true")
    cli("work", "--run", "true", "--items", "w1", "--budget-min", "1", "--merge", "ff", "--afk")  # refused: no commit
    cli("work", "status", "--wait", "0.1")
    cli("work", "logs", "w1", "--verify")
    cli("work", "runs")
    cli("gate", "ci")  # no ci configured: refused, but sent
    cli("work", "trace", "w1")
    cli("work", "status", "--follow")
    cli("work", "stop")
    cli("work", "rollback", "w1")
    cli("work", "allow-check", "w1")
    cli("work", "resume", "--budget-tokens", "1000")  # no paused run: refused, but sent
    cli("runner", "restart")  # in place (runner.restart)
    cli("runner", "stop")

    models = methods()
    sent = [json.loads(line) for line in log.read_text().splitlines()]
    problems = []
    for call in sent:
        model = models[call["method"]].model
        try:
            model.model_validate(call["params"])
        except Exception as exc:  # pydantic's ValidationError: name the method and the fields
            problems.append(f"{call['method']} {sorted(call['params'])}: {exc}")
    assert problems == []

    named = set(client_method_literals())
    assert named - {c["method"] for c in sent} == set(), "a method the client names was never driven here"
