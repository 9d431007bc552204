"""Sessions tied to their agent host (runner/core/tasks/hosts.py) with a FakeExecutor and a
hand-written host: asked once per session, ended (host_gone) only when the host is gone and
something that may not outlive it runs, detached tasks spared, session ends sparing them too."""

import pytest

from plugkit.config import Limits
from runner.core.tasks.manager import TaskManager
from runner.executors.base import ExecSpec
from tests.support.fake_clock import FakeClock
from tests.support.fake_executor import FakeExecutor, settle


class FakeHost:
    pid, label = 4242, "Qwen Code"

    def __init__(self) -> None:
        self.up = True

    def alive(self) -> bool:
        return self.up


@pytest.fixture
async def world():
    host, asked = FakeHost(), []

    def finder(peer, pid):
        asked.append((peer, pid))
        return host if pid == 77 else None

    fake = FakeExecutor()
    tasks = TaskManager([fake], Limits(), clock=FakeClock(), hosts=finder)
    yield tasks, host, asked
    await tasks.shutdown()


def spec(cwd, pid=77, detach=False, session="s") -> ExecSpec:
    return ExecSpec(session_id=session, cwd=str(cwd), lang="fake", code="work", peer=("127.0.0.1", 5000),
                    caller_pid=pid, detach=detach)


async def test_the_host_is_asked_once_per_session(tmp_path, world):
    tasks, _host, asked = world
    await tasks.exec(spec(tmp_path))
    await tasks.exec(spec(tmp_path, pid=78))
    await tasks.exec(spec(tmp_path, session="other", pid=None))  # a raw RPC caller names none: not asked
    assert asked == [(("127.0.0.1", 5000), 77)]


async def test_a_gone_host_kills_the_sessions_tasks_but_the_detached_one(tmp_path, world):
    tasks, host, _ = world
    plain = await tasks.exec(spec(tmp_path))
    kept = await tasks.exec(spec(tmp_path, detach=True))
    await settle()
    assert await tasks.end_gone_hosts() == []  # alive: nothing happens
    host.up = False
    assert await tasks.end_gone_hosts() == [plain.id]
    assert (plain.state, plain.reason) == ("killed", "host_gone") and not kept.finished
    # Still listed, as killed: nobody asked to forget them.
    assert {t.id for t in tasks.list_tasks("s", str(tmp_path))} == {plain.id, kept.id}
    assert await tasks.end_gone_hosts() == []  # ended once


async def test_a_person_without_a_host_is_never_ended_by_the_sweep(tmp_path, world):
    tasks, host, _ = world
    task = await tasks.exec(spec(tmp_path, pid=6000))  # the finder finds no host
    await settle()
    host.up = False
    assert await tasks.end_gone_hosts() == [] and not task.finished


async def test_a_session_end_spares_a_detached_task_and_keeps_its_session(tmp_path, world):
    tasks, _host, _ = world
    plain = await tasks.exec(spec(tmp_path))
    kept = await tasks.exec(spec(tmp_path, detach=True))
    await settle()
    assert await tasks.end_session("s", str(tmp_path)) == [plain.id]
    assert [t.id for t in tasks.list_tasks("s", str(tmp_path))] == [kept.id] and not kept.finished
