"""A worker's capability at the HTTP guard and the RPC layer (plugkit/work/capabilities.py,
runner/rpc/scope.py), in process: accepted on /rpc only, scoped there by the table, and one
request's capability never carries over to the next on the same keep-alive connection."""

import json

from runner.http.keys import CONTEXT
from plugkit.work.capabilities import Capability
from tests.support.inproc import auth


def _call(method: str, **params) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})


async def test_a_capability_reaches_rpc_only_within_its_scope(make_client, tmp_path):
    client = await make_client()
    worktree = tmp_path / "wt"
    worktree.mkdir()
    caps = client.server.app[CONTEXT].capabilities
    token = caps.mint(Capability("r1", "w1", "s1", str(worktree)))
    as_worker = {**auth(), "Authorization": f"Bearer {token}"}
    resp = await client.get("/debug", headers=as_worker)
    assert resp.status == 403  # every session's tasks are on /debug
    resp = await client.post("/rpc", data=_call("task.list", session_id="s1", cwd=str(worktree)), headers=as_worker)
    assert (await resp.json())["result"]["tasks"] == []
    resp = await client.post("/rpc", data=_call("task.list", session_id="s1", cwd=str(tmp_path)), headers=as_worker)
    assert "outside its worktree" in (await resp.json())["error"]["message"]
    resp = await client.post("/rpc", data=_call("runner.info"), headers=as_worker)
    assert "not a worker's" in (await resp.json())["error"]["message"]
    # The runner's token on the same connection right after: the whole runner again.
    resp = await client.post("/rpc", data=_call("runner.info"), headers=auth())
    assert "result" in await resp.json()
    caps.revoke(token)
    resp = await client.post("/rpc", data=_call("task.list", session_id="s1", cwd=str(worktree)), headers=as_worker)
    assert resp.status == 401
