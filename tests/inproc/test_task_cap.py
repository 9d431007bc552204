"""The running-task cap holds under a burst (issue 17.9): 300 concurrent task.exec through the
real app against a cap of 8 start exactly 8 real processes; every other call is refused -32003."""

import asyncio

from plugkit import errors
from plugkit.config import Limits
from tests.support.inproc import RpcError, call

CAP, CALLS, SESSIONS = 8, 300, 30


async def test_300_concurrent_execs_start_no_more_than_the_cap(make_client, tmp_path):
    client = await make_client(limits=Limits(running_tasks=CAP, tasks_per_session=64))
    ids = [{"session_id": f"s{i}", "cwd": str(tmp_path)} for i in range(SESSIONS)]

    async def attempt(n: int):
        try:
            return await call(client, "task.exec", **ids[n % SESSIONS], lang="bash", code="sleep 60",
                              timeout_ms=60_000)
        except RpcError as exc:
            return exc

    try:
        results = await asyncio.gather(*(attempt(n) for n in range(CALLS)))
        started = [r for r in results if isinstance(r, dict)]
        refused = [r for r in results if isinstance(r, RpcError)]
        assert len(started) == CAP, f"{len(started)} tasks accepted against a cap of {CAP}"
        assert len(refused) == CALLS - CAP and {r.code for r in refused} == {errors.LIMIT}
        info = await call(client, "runner.info")
        assert info["running_tasks"] == CAP
    finally:
        await asyncio.gather(*(call(client, "session.end", **key) for key in ids))
    assert (await call(client, "runner.info"))["running_tasks"] == 0
