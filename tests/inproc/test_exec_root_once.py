"""task.exec finds the workspace root once and passes it down (the walk up the directories
was done three times: the sandbox check, the session key, the language plugins)."""

import plugkit.workspace as workspace
from tests.support.inproc import auth


async def test_one_exec_walks_to_the_workspace_root_once(make_client, tmp_path, monkeypatch):
    client = await make_client()
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    (tmp_path / "proj" / "sub").mkdir()
    walks = []
    real = workspace.find_root
    monkeypatch.setattr(workspace, "find_root", lambda cwd, env=None: walks.append(cwd) or real(cwd, env))
    body = {"jsonrpc": "2.0", "id": 1, "method": "task.exec",
            "params": {"session_id": "s", "cwd": str(tmp_path / "proj" / "sub"), "lang": "bash",
                       "code": "true", "wait_ms": 10_000}}
    reply = await (await client.post("/rpc", json=body, headers=auth())).json()
    assert reply["result"]["task"]["state"] == "completed"
    assert walks == [str(tmp_path / "proj" / "sub")]
    # The session is still keyed by the workspace root: another cwd in it sees the task.
    listing = {"jsonrpc": "2.0", "id": 2, "method": "task.list",
               "params": {"session_id": "s", "cwd": str(tmp_path / "proj")}}
    tasks = (await (await client.post("/rpc", json=listing, headers=auth())).json())["result"]
    assert [t["task_id"] for t in tasks["tasks"]] == [reply["result"]["task"]["task_id"]]
