"""A node's runner RUNNING an attempt's worker as its own task (work.run, runner/rpc/work_host.py),
in process against a real git worktree and real processes: the worker is a task of this runner
in its session (listed, in the snapshot), read by cursor with its heartbeat and end in one answer
(work.read); its owner process killed -9 takes the task and what it left detached in the
background (the runner's pidfd, no guard process); work.unhost does too, answered once they
are gone; in its sandbox the token's path shows a capability, never this runner's token."""

import asyncio
import os
import subprocess
import sys

import psutil
import pytest

from tests.support.escapees import escapees, kill_all, unique_seconds
from tests.support.inproc import RpcError, call
from tests.support.node_attempt import SESSION, node_worktree, read_to_end, run_params


async def _gone(seconds: str, within: float = 30) -> bool:
    """Until no `sleep <seconds>` is left; awaited, so the runner on this loop goes on working."""
    for _ in range(int(within / 0.05)):
        if not escapees(seconds):
            return True
        await asyncio.sleep(0.05)
    return not escapees(seconds)


async def _status(client, wt, task_id: int) -> dict:
    return await call(client, "task.status", session_id=SESSION, cwd=str(wt), task_id=task_id)


async def test_the_worker_is_the_runners_task_read_by_cursor_to_its_end(make_client, tmp_path):
    client = await make_client()
    wt, base = node_worktree(tmp_path)
    started = await call(client, "work.run", **run_params(wt, base, os.getpid(), "echo one; echo two >&2; exit 3"))
    task_id = started["task_id"]
    listed = await call(client, "task.list", session_id=SESSION, cwd=str(wt))
    assert task_id in [t["task_id"] for t in listed["tasks"]], listed  # a person on the node sees it
    hosted = (await call(client, "debug.snapshot"))["snapshot"]["hosted"]
    assert hosted[SESSION]["task"] == f"task_{task_id}", hosted
    out, end = await read_to_end(client)
    assert "one" in out and "two" in out, out
    assert (end["ended"], end["state"], end["exit_code"], end["task_id"]) == (True, "failed", 3, task_id), end
    again = await call(client, "work.read", session_id=SESSION, cursor=end["cursor"])
    assert again["ended"] and again["data"] == "", again  # nothing read twice
    assert (await call(client, "work.unhost", session_id=SESSION))["unhosted"]
    with pytest.raises(RpcError, match="no worker run here"):
        await call(client, "work.read", session_id=SESSION)


async def test_its_owner_killed_takes_the_worker_and_its_detached_child(make_client, tmp_path):
    client = await make_client()
    wt, base = node_worktree(tmp_path)
    seconds = unique_seconds()
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        script = f"setsid sleep {seconds} & echo up; exec sleep {seconds}"
        task_id = (await call(client, "work.run", **run_params(wt, base, owner.pid, script)))["task_id"]
        for _ in range(600):
            if len(escapees(seconds)) == 2:
                break
            await asyncio.sleep(0.05)
        assert len(escapees(seconds)) == 2  # the worker and the child it left in a session of its own
        owner.kill()  # the Ray worker process force-cancelled: it reaches no unhost
        owner.wait()
        assert await _gone(seconds), "the worker outlived its owner"
        status = await _status(client, wt, task_id)
        for _ in range(600):
            if status["state"] != "running":
                break
            await asyncio.sleep(0.05)
            status = await _status(client, wt, task_id)
        assert (status["state"], status["reason"]) == ("killed", "host_gone"), status
        assert SESSION not in (await call(client, "debug.snapshot"))["snapshot"]["hosted"]
    finally:
        owner.kill()
        owner.wait()
        kill_all(seconds)


async def test_unhost_ends_the_worker_and_its_detached_child_before_it_answers(make_client, tmp_path):
    client = await make_client()
    wt, base = node_worktree(tmp_path)
    seconds = unique_seconds()
    try:
        script = f"setsid sleep {seconds} & echo up; exec sleep {seconds}"
        task_id = (await call(client, "work.run", **run_params(wt, base, os.getpid(), script)))["task_id"]
        got = await call(client, "work.read", session_id=SESSION, wait_s=10)
        assert "up" in got["data"] and not got["ended"], got
        assert (await call(client, "work.unhost", session_id=SESSION))["unhosted"]
        assert await _gone(seconds, within=10)
        status = await _status(client, wt, task_id)
        assert (status["state"], status["reason"]) == ("killed", "killed"), status
    finally:
        kill_all(seconds)


async def test_rejects_a_run_for_an_owner_that_is_gone_and_starts_nothing(make_client, tmp_path):
    client = await make_client()
    wt, base = node_worktree(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with pytest.raises(RpcError, match="no process"):
        await call(client, "work.run", **run_params(wt, base, dead.pid, "echo ran"))
    listed = await call(client, "task.list", session_id=SESSION, cwd=str(wt))
    assert listed["tasks"] == [], listed


async def test_in_its_sandbox_the_worker_sees_a_capability_not_the_runners_token(make_client, tmp_path):
    client = await make_client()
    wt, base = node_worktree(tmp_path)
    await call(client, "work.run", **run_params(wt, base, os.getpid(), 'cat "$PLUGKIT_HOME/token"; touch made-here',
                                           sandbox=True))
    out, end = await read_to_end(client)
    assert end["exit_code"] == 0, (out, end)
    seen = out.strip().splitlines()[-1]
    assert seen.startswith("pkw_") and seen != client.runtime.token, out
    assert (wt / "made-here").exists()  # its worktree is its to write
    await call(client, "work.unhost", session_id=SESSION)
    assert not any(p.info["cmdline"] and "made-here" in " ".join(p.info["cmdline"])
                   for p in psutil.process_iter(["cmdline"]))
