"""A runner hosting an attempt for a supervisor elsewhere (work.host: a Ray node's runner), in
process against a real git worktree: the worker's hook calls meet the worker policy, the commit
check and the item's context, counted as its heartbeat; it holds a capability scoped to its
worktree, not the runner's token; unhosting, or its owner process going away, revokes it."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.inproc import RpcError, auth, call

SESSION = "plugkit-work-ab12cd34-w1-1"


def _git(cwd, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout.strip()


def _worktree(tmp_path):
    """A linked worktree on plugkit/w1, as a node makes one from its clone: the runner reads a
    worker's git state only through a worktree whose admin dir names it back."""
    clone, wt = tmp_path / "attempt" / "clone", tmp_path / "attempt" / "wt"
    clone.mkdir(parents=True)
    _git(clone, "init", "-q", "-b", "main")
    _git(clone, "config", "user.email", "w@example.invalid")
    _git(clone, "config", "user.name", "w")
    (clone / "README").write_text("a project\n")
    _git(clone, "add", "-A")
    _git(clone, "commit", "-qm", "base")
    _git(clone, "worktree", "add", "-q", "-b", "plugkit/w1", str(wt))
    return wt, _git(wt, "rev-parse", "HEAD")


async def _as(client, token: str, method: str, **params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    resp = await client.post("/rpc", data=body, headers={**auth(), "Authorization": f"Bearer {token}"})
    return resp.status, (await resp.json() if resp.status == 200 else None)


def _host(wt, base, owner: int) -> dict:
    return dict(worktree=str(wt), session_id=SESSION, run="ab12cd34", item="w1", attempt=1,
                branch="plugkit/w1", base=base, owner_pid=owner)


async def test_a_hosted_worker_meets_the_worker_policy_with_its_own_capability(make_client, tmp_path):
    client = await make_client()
    wt, base = _worktree(tmp_path)
    path = (await call(client, "work.host", **_host(wt, base, os.getpid())))["capability"]
    assert oct(os.stat(path).st_mode & 0o777) == "0o600" and str(tmp_path) in path  # in the runner's home
    cap = Path(path).read_text().strip()
    assert cap.startswith("pkw_") and cap != client.runtime.token
    hook = dict(session_id="host-session", cwd=str(wt), worker_session=SESSION)

    _, answer = await _as(client, cap, "hook.pre_tool", **hook, tool_name="Bash", tool_input={"command": "rm -rf .."})
    assert answer["result"]["decision"] == "deny" and "plugkit work" in answer["result"]["reason"], answer
    _, answer = await _as(client, cap, "hook.pre_tool", **hook, tool_name="Bash", tool_input={"command": "ls"})
    assert answer["result"]["decision"] == "allow", answer
    _, answer = await _as(client, cap, "hook.session_start", **hook)
    assert "worker for item w1 (attempt 1) on branch plugkit/w1" in answer["result"]["context"], answer
    # exec: code from its worktree is judged by the same policy, before anything runs.
    _, answer = await _as(client, cap, "task.exec", session_id="host-session", cwd=str(wt), lang="bash",
                          code="rm -rf ..")
    assert "plugkit work" in answer["error"]["message"], answer

    # Stop: turned back once while nothing is committed past the commit it started at.
    _, answer = await _as(client, cap, "hook.stop", **hook)
    assert answer["result"]["block"] and "nothing committed on plugkit/w1" in answer["result"]["reason"], answer
    _, answer = await _as(client, cap, "hook.stop", **hook)
    assert not answer["result"]["block"], answer  # once per attempt: a worker that cannot commit still stops

    # Beyond its worktree and item, its capability reaches nothing; the hosting RPCs are not its.
    for method, params in (("approval.grant", {"session_id": "s", "cwd": str(wt), "item_id": "w1"}),
                           ("work.unhost", {"session_id": SESSION}),
                           ("work.host", _host(wt, base, os.getpid()))):
        _, answer = await _as(client, cap, method, **params)
        assert "not a worker's" in answer["error"]["message"], (method, answer)
    beats = await call(client, "work.beats", session_id=SESSION)
    assert beats["hosted"] and beats["beats"] >= 5, beats  # each of its calls above, answered here
    # What it was refused is kept for the node side to relay to its item at the supervisor.
    assert beats["refusals"] == 3 and "approval.grant" in beats["refused"][0], beats

    assert (await call(client, "work.unhost", session_id=SESSION))["unhosted"]
    assert not os.path.exists(path)
    status, _ = await _as(client, cap, "hook.pre_tool", **hook, tool_name="Bash", tool_input={"command": "ls"})
    assert status == 401  # revoked with the hosting
    answer = await call(client, "hook.pre_tool", **hook, tool_name="Bash", tool_input={"command": "rm -rf .."})
    assert "plugkit work" not in answer["reason"]  # any session's again: the gates (none here) answer
    assert (await call(client, "work.beats", session_id=SESSION))["hosted"] is False


async def test_a_hosting_whose_owner_is_gone_is_dropped_and_its_capability_revoked(make_client, tmp_path):
    client = await make_client()
    wt, base = _worktree(tmp_path)
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        path = (await call(client, "work.host", **_host(wt, base, owner.pid)))["capability"]
        cap = Path(path).read_text().strip()
        assert (await call(client, "work.beats", session_id=SESSION))["hosted"]
    finally:
        owner.kill()
        owner.wait()
    # A force-cancelled Ray task never reaches its unhost: the next look drops it.
    assert (await call(client, "work.beats", session_id=SESSION))["hosted"] is False
    assert not os.path.exists(path)
    status, _ = await _as(client, cap, "hook.pre_tool", session_id="s", cwd=str(wt), worker_session=SESSION,
                          tool_name="Bash", tool_input={"command": "ls"})
    assert status == 401


async def test_rejects_hosting_for_an_owner_that_does_not_exist(make_client, tmp_path):
    client = await make_client()
    wt, base = _worktree(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        await call(client, "work.host", **_host(wt, base, dead.pid))
        raise AssertionError("hosted for a process that is gone")
    except RpcError as exc:
        assert "no process" in str(exc)
    try:
        await call(client, "work.host", **{**_host(wt, base, os.getpid()), "base": "main"})
        raise AssertionError("a branch name taken as the base commit")
    except RpcError as exc:
        assert exc.code == -32602
    try:  # fails closed: a loopback-only network that cannot reach the model refuses the hosting
        await call(client, "work.host", **_host(wt, base, os.getpid()), network="loopback-model",
                   base_urls={"ANTHROPIC_BASE_URL": "http://10.1.2.3:8080"})
        raise AssertionError("hosted with an endpoint the namespace cannot relay")
    except RpcError as exc:
        assert exc.code == -32006 and "10.1.2.3" in str(exc)
    assert (await call(client, "work.beats", session_id=SESSION))["hosted"] is False


async def test_a_loopback_only_hosting_holds_the_relay_until_unhosted(make_client, tmp_path):
    client = await make_client()
    wt, base = _worktree(tmp_path)
    hosted = await call(client, "work.host", **_host(wt, base, os.getpid()), network="loopback-model",
                        base_urls={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/v1"})
    folder, ports = hosted["relay"]["folder"], hosted["relay"]["ports"]
    assert ports == sorted([9, client.runtime.port]), hosted  # the model endpoint and this runner
    assert {f"{p}.sock" for p in ports} | {"hosts"} == set(os.listdir(folder))
    assert (await call(client, "work.unhost", session_id=SESSION))["unhosted"]
    assert not os.path.exists(folder)
