"""A session's leftovers die with its agent host (issue 30.3): where a host fires no session
end (`qwen -p`), the runner ties the session to the host process its first exec came from (the
nearest agent-host ancestor of the CLI or hook) and, once that process is gone, kills what the
session still runs; a task started with --detach outlives it, and exec:tasks marks it. The host
here is a real process named as an agent host (a script called `qwen`); tests/hosts does the
same with the real Qwen Code."""

import json
import subprocess
import time

import pytest

from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e


def run_host(tmp_path, home, name: str, *execs: list[str]) -> list[dict]:
    """Run a host process called `name` that starts each exec (as its agent's shell would) and exits."""
    plugkit = " ".join(cli_argv())
    lines = [f"{plugkit} exec:bash --wait 0.3 --json {' '.join(args)} > {tmp_path}/out{i}.json"
             for i, args in enumerate(execs)]
    host = tmp_path / name
    host.write_text("#!/bin/sh\n" + "\n".join(lines) + "\n")
    host.chmod(0o755)
    subprocess.run([str(host)], cwd=tmp_path, env={**home.env, "PLUGKIT_SESSION": "agent-q"}, timeout=60,
                   check=True)
    return [json.loads((tmp_path / f"out{i}.json").read_text())["task"] for i in range(len(execs))]


def status(home, cwd, tid: int) -> dict:
    done = home.cli("exec:status", f"task_{tid}", "--json", cwd=str(cwd), env={"PLUGKIT_SESSION": "agent-q"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["task"]


def until_ended(home, cwd, tid: int, timeout: float = 15) -> dict:
    deadline = time.monotonic() + timeout
    while (info := status(home, cwd, tid))["state"] == "running":
        assert time.monotonic() < deadline, info
        time.sleep(0.2)
    return info


def test_the_hosts_exit_kills_its_sessions_tasks_but_a_detached_one(home, tmp_path):
    plain, kept = run_host(tmp_path, home, "qwen", ["'sleep 300'"], ["--detach", "'sleep 301'"])
    assert plain["state"] == kept["state"] == "running" and kept["detached"]
    ended = until_ended(home, tmp_path, plain["task_id"])
    assert (ended["state"], ended["reason"]) == ("killed", "host_gone"), ended
    assert status(home, tmp_path, kept["task_id"])["state"] == "running"
    listed = home.cli("exec:tasks", cwd=str(tmp_path), env={"PLUGKIT_SESSION": "agent-q"}).stdout
    assert f"task_{kept['task_id']}" in listed and "running (detached)" in listed, listed
    home.cli("exec:close", f"task_{kept['task_id']}", cwd=str(tmp_path), env={"PLUGKIT_SESSION": "agent-q"})


def test_a_task_started_from_a_persons_shell_outlives_the_cli(home, tmp_path):
    # No agent host above the CLI: nothing to tie to, so the task runs on when the CLI exits.
    [task] = run_host(tmp_path, home, "not-an-agent", ["'sleep 300'"])
    time.sleep(2.5)  # two sweeps and more
    assert status(home, tmp_path, task["task_id"])["state"] == "running"
    home.cli("exec:close", f"task_{task['task_id']}", cwd=str(tmp_path), env={"PLUGKIT_SESSION": "agent-q"})
