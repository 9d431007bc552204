"""Runner memory is bounded across sessions (issue 31.3): past the global cap the oldest finished
tasks leave memory first, running ones never do, and task.status still answers from the ledger."""

import pytest

from runner.core.tasks import kept
from runner.http.keys import CONTEXT
from tests.support.inproc import call

CAP = 3


@pytest.fixture
async def client(make_client, monkeypatch):
    monkeypatch.setattr(kept, "KEEP_FINISHED_TOTAL", CAP)
    return await make_client()


def in_memory(client) -> set[int]:
    return {t.id for t in client.app[CONTEXT].tasks.all_tasks()}


async def test_the_oldest_finished_tasks_leave_memory_first_across_sessions(client, tmp_path):
    sessions = [(f"s{i}", tmp_path / f"w{i}") for i in range(3)]
    for _, cwd in sessions:
        cwd.mkdir()
    running = await call(client, "task.exec", session_id="s0", cwd=str(sessions[0][1]), lang="bash",
                         code="sleep 30")
    done = []
    for i in range(5):  # 5 finished tasks over 3 sessions, each session far under its own cap
        session, cwd = sessions[i % 3]
        res = await call(client, "task.exec", session_id=session, cwd=str(cwd), lang="bash",
                         code=f"exit {i + 1}", wait_ms=10_000)
        assert res["task"]["state"] == "failed", res
        done.append((session, cwd, res["task"]["task_id"], i + 1))
    held = in_memory(client)
    assert {t for _, _, t, _ in done[-CAP:]} <= held
    assert not {t for _, _, t, _ in done[:-CAP]} & held  # the two oldest finished left memory
    assert running["task"]["task_id"] in held  # a running task is never evicted
    for session, cwd, task_id, code in done:  # the ledger still answers for every one of them
        status = await call(client, "task.status", session_id=session, cwd=str(cwd), task_id=task_id)
        assert (status["state"], status["exit_code"]) == ("failed", code), status
    # Asking rehydrated the evicted ones as the newest: memory still holds CAP finished tasks.
    assert len([t for t in client.app[CONTEXT].tasks.all_tasks() if t.finished]) == CAP
    await call(client, "task.kill", session_id="s0", cwd=str(sessions[0][1]), task_id=running["task"]["task_id"])
