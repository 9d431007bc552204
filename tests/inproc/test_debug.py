"""The /debug registry: what exists is listed, what is gone is not, counters move."""

import json

from tests.support.inproc import auth, call


async def snapshot(client) -> dict:
    return (await call(client, "debug.snapshot"))["snapshot"]


async def test_snapshot_lists_a_task_while_it_runs_and_not_after_it_is_forgotten(make_client, tmp_path):
    client = await make_client()
    res = await call(client, "task.exec", session_id="dbg", cwd=str(tmp_path), lang="bash",
                     code="echo hi; sleep 30", wait_ms=0)
    task_id = res["task"]["task_id"]
    # wait 0 answers at once, maybe before the process exists (pending): the registry is read
    # once it is running.
    assert (await call(client, "task.wait", session_id="dbg", cwd=str(tmp_path), task_id=task_id,
                       until_text="hi", timeout_ms=10_000))["matched"]
    snap = await snapshot(client)
    assert [t["task_id"] for t in snap["tasks"] if t["state"] == "running"] == [task_id]
    assert [s["session_id"] for s in snap["sessions"]] == ["dbg"]
    assert {"process"} <= set(snap["executors"])
    await call(client, "task.kill", session_id="dbg", cwd=str(tmp_path), task_id=task_id, forget=True)
    snap = await snapshot(client)
    assert snap["tasks"] == []
    assert snap["tasks_by_end_state"] == {"killed": 1}
    await call(client, "session.end", session_id="dbg", cwd=str(tmp_path))
    assert (await snapshot(client))["sessions"] == []


async def test_counters_and_latency_move(make_client, tmp_path):
    client = await make_client()
    before = await snapshot(client)
    await call(client, "runner.info")
    try:
        await call(client, "task.status", session_id="x", cwd=str(tmp_path), task_id=99)
    except Exception:
        pass
    after = await snapshot(client)
    assert after["counters"]["requests"]["runner.info"] == before["counters"]["requests"].get("runner.info", 0) + 1
    assert after["counters"]["errors"]["-32001"] == 1
    assert sum(after["latency"]["runner.info"].values()) >= 1


async def test_debug_route_needs_the_token_and_matches_the_rpc(make_client):
    client = await make_client()
    assert (await client.get("/debug")).status == 401
    resp = await client.get("/debug", headers=auth())
    body = json.loads(await resp.text())
    assert resp.status == 200 and body["runner"]["port"] == client.runtime.port
    assert "reaper" in body and "sessions" in body


async def test_subsystems_unregister_when_they_stop(make_client):
    from runner.http.keys import CONTEXT

    client = await make_client()
    snapshots = client.app[CONTEXT].snapshots
    assert {"sessions", "tasks", "executors", "reaper"} <= set(snapshots)
    await client.close()
    assert not {"sessions", "tasks", "executors", "reaper"} & set(snapshots)
