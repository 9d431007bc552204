"""A runner running an attempt for a supervisor elsewhere (work.run: a Ray node's runner), in
process against a real git worktree and a real sandboxed worker: the worker's hook calls meet
the worker policy, the commit check and the item's context, counted as its heartbeat; it holds
a capability scoped to its worktree, not the runner's token; unhosting, or its owner process
going away, revokes it."""

import asyncio
import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.inproc import RpcError, call
from tests.support.node_attempt import SESSION, as_token, node_worktree, read_to_end, run_params


async def _capability(client, tmp_path) -> tuple[str, str]:
    """(the file, the token) the worker executor minted for the sandboxed worker, once it runs."""
    for _ in range(1200):
        found = glob.glob(str(tmp_path / "capabilities" / "worker-*" / "token"))
        if found:
            return found[0], Path(found[0]).read_text().strip()
        await asyncio.sleep(0.05)
    raise AssertionError(f"no capability minted: {await call(client, 'work.read', session_id=SESSION)}")


async def test_a_hosted_worker_meets_the_worker_policy_with_its_own_capability(make_client, tmp_path):
    client = await make_client()
    wt, base = node_worktree(tmp_path)
    await call(client, "work.run", **run_params(wt, base, os.getpid(), "sleep 300", sandbox=True))
    path, cap = await _capability(client, tmp_path)
    assert oct(os.stat(path).st_mode & 0o777) == "0o600" and str(tmp_path) in path  # in the runner's home
    assert cap.startswith("pkw_") and cap != client.runtime.token
    hook = dict(session_id="host-session", cwd=str(wt), worker_session=SESSION)

    _, answer = await as_token(client, cap, "hook.pre_tool", **hook, tool_name="Bash",
                               tool_input={"command": "rm -rf .."})
    assert answer["result"]["decision"] == "deny" and "plugkit work" in answer["result"]["reason"], answer
    _, answer = await as_token(client, cap, "hook.pre_tool", **hook, tool_name="Bash", tool_input={"command": "ls"})
    assert answer["result"]["decision"] == "allow", answer
    _, answer = await as_token(client, cap, "hook.session_start", **hook)
    assert "worker for item w1 (attempt 1) on branch plugkit/w1" in answer["result"]["context"], answer
    # exec: code from its worktree is judged by the same policy, before anything runs.
    _, answer = await as_token(client, cap, "task.exec", session_id="host-session", cwd=str(wt), lang="bash",
                               code="rm -rf ..")
    assert "plugkit work" in answer["error"]["message"], answer

    # Stop: turned back once while nothing is committed past the commit it started at.
    _, answer = await as_token(client, cap, "hook.stop", **hook)
    assert answer["result"]["block"] and "nothing committed on plugkit/w1" in answer["result"]["reason"], answer
    _, answer = await as_token(client, cap, "hook.stop", **hook)
    assert not answer["result"]["block"], answer  # once per attempt: a worker that cannot commit still stops

    # Beyond its worktree and item, its capability reaches nothing; the hosting RPCs are not its.
    for method, params in (("approval.grant", {"session_id": "s", "cwd": str(wt), "item_id": "w1"}),
                           ("work.unhost", {"session_id": SESSION}),
                           ("work.run", run_params(wt, base, os.getpid(), "true"))):
        _, answer = await as_token(client, cap, method, **params)
        assert "not a worker's" in answer["error"]["message"], (method, answer)
    beats = await call(client, "work.read", session_id=SESSION)
    assert beats["beats"] >= 5 and not beats["ended"], beats  # each of its calls above, answered here
    # What it was refused is kept for the node side to relay to its item at the supervisor.
    assert beats["refusals"] == 3 and "approval.grant" in beats["refused"][0], beats

    assert (await call(client, "work.unhost", session_id=SESSION))["unhosted"]
    assert not os.path.exists(path)
    status, _ = await as_token(client, cap, "hook.pre_tool", **hook, tool_name="Bash", tool_input={"command": "ls"})
    assert status == 401  # revoked with the hosting
    answer = await call(client, "hook.pre_tool", **hook, tool_name="Bash", tool_input={"command": "rm -rf .."})
    assert "plugkit work" not in answer["reason"]  # any session's again: the gates (none here) answer


async def test_a_hosting_whose_owner_is_gone_is_dropped_and_its_capability_revoked(make_client, tmp_path):
    client = await make_client()
    wt, base = node_worktree(tmp_path)
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        await call(client, "work.run", **run_params(wt, base, owner.pid, "sleep 300", sandbox=True))
        path, cap = await _capability(client, tmp_path)
    finally:
        owner.kill()
        owner.wait()
    # A force-cancelled Ray task never reaches its unhost: the runner's pidfd of its owner does.
    for _ in range(1200):
        if not os.path.exists(path):
            break
        await asyncio.sleep(0.05)
    assert not os.path.exists(path)
    status, _ = await as_token(client, cap, "hook.pre_tool", session_id="s", cwd=str(wt), worker_session=SESSION,
                               tool_name="Bash", tool_input={"command": "ls"})
    assert status == 401
    with pytest.raises(RpcError, match="no worker run here"):
        await call(client, "work.read", session_id=SESSION)


async def test_rejects_a_run_it_cannot_hold_as_it_was_asked(make_client, tmp_path):
    client = await make_client()
    wt, base = node_worktree(tmp_path)
    try:
        await call(client, "work.run", **{**run_params(wt, base, os.getpid(), "true"), "base": "main"})
        raise AssertionError("a branch name taken as the base commit")
    except RpcError as exc:
        assert exc.code == -32602
    try:  # fails closed: a loopback-only network that cannot reach the model refuses the worker
        await call(client, "work.run", **run_params(wt, base, os.getpid(), "true", sandbox=True,
                                                     network="loopback-model",
                                                     env={"ANTHROPIC_BASE_URL": "http://10.1.2.3:8080"}))
        raise AssertionError("ran with an endpoint the namespace cannot relay")
    except RpcError as exc:
        assert exc.code == -32006 and "10.1.2.3" in str(exc)
    listed = await call(client, "task.list", session_id=SESSION, cwd=str(wt))
    assert listed["tasks"] == [], listed
    with pytest.raises(RpcError, match="no worker run here"):
        await call(client, "work.read", session_id=SESSION)


async def test_a_loopback_only_worker_reaches_this_runner_through_its_relay(make_client, tmp_path):
    client = await make_client()
    wt, base = node_worktree(tmp_path)
    # The port file a served runner writes at boot (an in-process one is not booted): where the
    # worker executor learns which port its relay reaches.
    (tmp_path / "port").write_text(json.dumps({"port": client.runtime.port}))
    probe = ("import os, socket; p = os.environ['PLUGKIT_PORT']; s = socket.create_connection(('127.0.0.1', int(p)), 5); "
             "s.sendall(f'GET /health HTTP/1.1\\r\\nHost: 127.0.0.1:{p}\\r\\nConnection: close\\r\\n\\r\\n'.encode()); "
             "print(s.recv(200).split(b'\\r\\n')[0].decode())")
    await call(client, "work.run", **run_params(
        wt, base, os.getpid(), f"{sys.executable} -c \"{probe}\"", sandbox=True, network="loopback-model",
        env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/v1", "PLUGKIT_PORT": str(client.runtime.port)}))
    out, end = await read_to_end(client)
    assert end["exit_code"] == 0 and "HTTP/1.1 200" in out, (out, end)
    await call(client, "work.unhost", session_id=SESSION)
