"""A worker's exec: task after its attempt's work_docker proxy closed (runner/executors/process.py),
through the real RPC path with a capability: refused in a line that says the attempt ended, not
run to find no engine (or, were the path reused, another attempt's)."""

import json

from plugkit.work.capabilities import Capability
from runner.http.keys import CONTEXT
from tests.support.inproc import auth


async def test_an_exec_of_an_attempt_whose_proxy_closed_is_refused_saying_so(make_client, tmp_path):
    client = await make_client()
    worktree = tmp_path / "wt"
    worktree.mkdir()
    gone = tmp_path / "home-docker" / "sock"  # the proxy's socket, removed at the attempt's teardown
    token = client.server.app[CONTEXT].capabilities.mint(Capability("r1", "w1", "s1", str(worktree), docker=str(gone)))
    call = {"jsonrpc": "2.0", "id": 1, "method": "task.exec",
            "params": {"session_id": "s1", "cwd": str(worktree), "lang": "bash", "code": "docker ps"}}
    resp = await client.post("/rpc", data=json.dumps(call), headers={**auth(), "Authorization": f"Bearer {token}"})
    message = (await resp.json())["error"]["message"]
    assert "this attempt has ended" in message and "work_docker" in message, message
