"""Idle session expiry with a fake clock: idle + nothing running -> ended; polling or running -> kept."""

from plugkit.config import Limits
from runner.core.tasks.manager import TaskManager
from runner.core.tasks.output import OutputBuffer
from runner.core.tasks.task import Task
from tests.support.fake_clock import FakeClock as Clock
from tests.support.fake_executor import FakeExecutor


def manager(tmp_path, clock: Clock) -> TaskManager:
    return TaskManager([FakeExecutor()], Limits(session_idle_s=60), clock=clock)


def add_task(mgr: TaskManager, name: str, tmp_path, state: str) -> Task:
    key = mgr.open_session(name, str(tmp_path))
    task = Task(id=len(mgr.all_tasks()) + 1, session=key, lang="bash", buffer=OutputBuffer(1024), state=state)
    next(s for s in mgr.sessions() if s.key == key).tasks[task.id] = task
    return task


def test_idle_session_without_running_tasks_is_ended(tmp_path):
    clock = Clock()
    mgr = manager(tmp_path, clock)
    add_task(mgr, "quiet", tmp_path, "completed")
    clock.now += 59
    assert mgr.expire_idle() == []
    clock.now += 2
    assert [k.session_id for k in mgr.expire_idle()] == ["quiet"]
    assert mgr.sessions() == []


def test_session_with_a_running_task_is_kept(tmp_path):
    clock = Clock()
    mgr = manager(tmp_path, clock)
    add_task(mgr, "busy", tmp_path, "running")
    clock.now += 3600
    assert mgr.expire_idle() == []


def test_polling_counts_as_activity(tmp_path):
    clock = Clock()
    mgr = manager(tmp_path, clock)
    task = add_task(mgr, "polled", tmp_path, "completed")
    for _ in range(5):
        clock.now += 50
        mgr.task("polled", str(tmp_path), task.id)  # a status/output poll
        assert mgr.expire_idle() == []
    clock.now += 61
    assert len(mgr.expire_idle()) == 1
