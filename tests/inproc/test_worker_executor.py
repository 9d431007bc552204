"""lang "worker" through the real app: a worker is a task like any other (its session, its
cwd, its output, its kill), the only task handed the runner's home, and one no caller from
the wire can start (task.exec refuses it; a workspace's verify_lang cannot name it)."""

import asyncio
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from plugkit import refusals
from runner.executors.base import ExecSpec
from runner.http.keys import CONTEXT
from tests.support.gates_inproc import make_repo, to_verify
from tests.support.escapees import escapees, gone, kill_all, unique_seconds
from tests.support.inproc import RpcError, call
from tests.support.runner_home import rpc as home_rpc


@pytest.fixture
async def runner(make_client, tmp_path):
    client = await make_client()
    work = tmp_path / "wt"
    work.mkdir()
    return Runner(client.server.app[CONTEXT], work, client)


@dataclass
class Runner:
    """The in-process runner's (frozen) Context, with the worktree and client these tests use."""
    ctx: object
    work: Path
    client: object

    @property
    def tasks(self):
        return self.ctx.tasks

    @property
    def runtime(self):
        return self.ctx.runtime


def worker(ctx, argv, stdin=None, env=None, session="w1", timeout_s=60.0) -> ExecSpec:
    return ExecSpec(session_id=session, cwd=str(ctx.work), lang="worker", code=json.dumps(argv), stdin=stdin,
                    env=env, timeout_s=timeout_s)


def text(task) -> str:
    return task.buffer.text(task.buffer.start, task.buffer.end)


async def test_a_command_worker_reads_its_prompt_in_its_worktree_and_its_hooks_find_this_runner(runner):
    script = 'read -r line; echo "got=$line"; echo "cwd=$(pwd)"; echo "home=$PLUGKIT_HOME"; echo "port=$PLUGKIT_PORT"'
    task = await runner.tasks.exec(worker(runner, ["sh", "-c", script], stdin="work item w1: do it\n"))
    await runner.tasks.wait_done(task, 30)
    out = text(task)
    assert (task.state, task.reason, task.exit_code, task.lang) == ("completed", "exit_zero", 0, "worker"), out
    assert "got=work item w1: do it" in out and f"cwd={os.path.realpath(runner.work)}" in out
    assert f"home={os.path.abspath(runner.runtime.home)}" in out
    assert task.session.session_id == "w1"


async def test_other_tasks_still_never_see_the_home(runner):
    task = await runner.tasks.exec(ExecSpec(session_id="s", cwd=str(runner.work), lang="bash",
                                            code='echo "home=[$PLUGKIT_HOME]"', env={"PLUGKIT_HOME": "/forged"}))
    await runner.tasks.wait_done(task, 30)
    assert "home=[]" in text(task)


async def test_a_caller_cannot_point_the_worker_at_another_home(runner):
    task = await runner.tasks.exec(worker(runner, ["sh", "-c", 'echo "home=$PLUGKIT_HOME"'],
                                          env={"PLUGKIT_HOME": "/elsewhere", "PATH": os.environ["PATH"]}))
    await runner.tasks.wait_done(task, 30)
    assert f"home={os.path.abspath(runner.runtime.home)}" in text(task)


@pytest.mark.parametrize("code", ["not json", "[]", '["sh", ""]', '"sh"', '{"argv": "sh"}', "[1, 2]"])
async def test_code_that_is_not_an_argv_is_refused_before_any_task(runner, code):
    with pytest.raises(refusals.Invalid, match="JSON list of non-empty strings"):
        await runner.tasks.exec(ExecSpec(session_id="w1", cwd=str(runner.work), lang="worker", code=code))
    assert runner.tasks.list_tasks("w1", str(runner.work)) == []


async def test_a_missing_program_is_refused_naming_it_and_the_way_out(runner):
    with pytest.raises(refusals.Unavailable) as caught:
        await runner.tasks.exec(worker(runner, ["no-such-agent-xyz", "-p", "hi"]))
    message = caught.value.message
    assert "'no-such-agent-xyz'" in message and "--worker command --run PROGRAM" in message
    assert "\n" not in message and runner.tasks.list_tasks("w1", str(runner.work)) == []


async def test_the_program_is_found_on_the_path_the_worker_will_see(runner, tmp_path):
    bin_dir = runner.work / "agent-bin"  # in the worktree: the sandbox hides the runner's home (tmp_path)
    bin_dir.mkdir()
    agent = bin_dir / "my-agent"
    agent.write_text("#!/bin/sh\necho agent-ran \"$@\"\n")
    agent.chmod(0o755)
    with pytest.raises(refusals.Unavailable):  # not on the runner's PATH
        await runner.tasks.exec(worker(runner, ["my-agent", "x"]))
    task = await runner.tasks.exec(worker(runner, ["my-agent", "x"], env={"PATH": f"{bin_dir}:{os.environ['PATH']}"}))
    await runner.tasks.wait_done(task, 30)
    assert task.state == "completed" and "agent-ran x" in text(task)


async def test_killing_a_worker_ends_its_whole_tree(runner):
    seconds = unique_seconds()  # found by its argv: inside the sandbox's PID namespace $! is not our pid
    script = f'sleep {seconds} & setsid sleep {seconds} & echo started; wait'
    try:
        task = await runner.tasks.exec(worker(runner, ["sh", "-c", script]))
        await runner.tasks.wait(task, 30, "started", None, None)
        deadline = time.monotonic() + 10  # "started" may print before both sleeps exec
        while len(escapees(seconds)) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert len(escapees(seconds)) == 2
        await runner.tasks.kill(task, False)
        await runner.tasks.wait_done(task, 30)
        assert task.state == "killed"
        assert gone(seconds)
    finally:
        kill_all(seconds)


async def test_a_worker_left_behind_by_its_worker_ends_with_it(runner):
    """A worker exiting 0 with a setsid'd child running: the sandbox's PID namespace ends it."""
    seconds = unique_seconds()
    try:
        task = await runner.tasks.exec(worker(runner, ["sh", "-c", f"setsid sleep {seconds} & echo left"]))
        await runner.tasks.wait_done(task, 30)
        assert task.state == "completed" and gone(seconds)
    finally:
        kill_all(seconds)


async def test_a_worker_that_fails_ends_failed_with_its_code(runner):
    task = await runner.tasks.exec(worker(runner, [sys.executable, "-c", "raise SystemExit(3)"]))
    await runner.tasks.wait_done(task, 30)
    assert (task.state, task.reason, task.exit_code) == ("failed", "exit_nonzero", 3)


# --- the attacks: a caller on the wire asking for the home --------------------------------------

@pytest.mark.parametrize("lang", ["worker", "Worker", " worker "])
async def test_task_exec_from_the_wire_refuses_a_worker_and_spawns_nothing(runner, tmp_path, lang):
    leak = tmp_path / "leak"
    with pytest.raises(RpcError) as caught:
        await call(runner.client, "task.exec", session_id="s", cwd=str(runner.work), lang=lang,
                   code=json.dumps(["sh", "-c", f'echo "$PLUGKIT_HOME" > {leak}']), wait_ms=2000)
    assert caught.value.code == -32602 and "worker tasks are started by plugkit work only" in str(caught.value)
    assert not leak.exists() and runner.tasks.list_tasks("s", str(runner.work)) == []


async def test_a_workspace_cannot_make_gate_verify_a_worker(make_client, tmp_path):
    client = await make_client()
    work = make_repo(tmp_path / "work")
    leak = tmp_path / "leak"
    config = f'gates = "enforce"\nverify_lang = "worker"\nverify = \'["sh", "-c", "echo $PLUGKIT_HOME > {leak}"]\'\n'
    (work / ".plugkit").mkdir()
    (work / ".plugkit" / "config.toml").write_text(config)
    subprocess.run(["git", "-C", str(work), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(work), "commit", "-qm", "config"], check=True)

    async def rpc(method: str, **params):
        return await call(client, method, session_id="s1", cwd=str(work), **params)

    rpc.work = work
    await to_verify(rpc)
    ran = await rpc("gate.verify", wait_ms=10_000)
    # verify_lang fell back to bash (which cannot run a JSON list): red, and nothing leaked.
    assert ran["task"]["lang"] == "bash" and ran["verify"]["outcome"] == "red"
    assert not leak.exists()
    status = await rpc("gate.status")
    assert "verify_lang cannot be worker" in json.dumps(status), status


@pytest.mark.e2e
def test_a_real_runner_refuses_exec_worker_from_the_cli_and_the_raw_rpc(home, tmp_path):
    """The attack as an agent would make it: `plugkit exec:worker` and task.exec by hand."""
    work = tmp_path / "w"
    work.mkdir()
    leak = tmp_path / "leak"
    argv = json.dumps(["sh", "-c", f'echo "$PLUGKIT_HOME" > {leak}'])
    try:
        done = home.cli("exec:worker", argv, cwd=work)
        assert done.returncode != 0 and "worker tasks are started by plugkit work only" in done.stderr + done.stdout
        with pytest.raises(Exception) as caught:
            home_rpc(home, "task.exec", {"session_id": "s", "cwd": str(work), "lang": "worker", "code": argv,
                                         "wait_ms": 2000})
        assert "worker tasks are started by plugkit work only" in str(caught.value)
        listed = home_rpc(home, "task.list", {"session_id": "s", "cwd": str(work)})
        assert listed["tasks"] == [] and not leak.exists()
    finally:
        home.stop_all()


async def test_a_host_workers_stdin_is_closed_so_nothing_waits_on_it(runner):
    task = await runner.tasks.exec(worker(runner, ["sh", "-c", 'cat; echo "eof-seen"']))
    await runner.tasks.wait_done(task, 30)
    assert task.state == "completed" and "eof-seen" in text(task)
