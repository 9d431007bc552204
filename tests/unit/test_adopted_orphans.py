"""The attribution rule for orphans the runner adopts in tags-only mode (runner/core/tasks/adopted.py):
an orphan lives while any process task that ran when it was first seen still runs."""

import asyncio

import pytest

from plugkit.config import Limits
from runner.core.tasks.manager import TaskManager
from runner.executors.base import ExecSpec, Outcome
from tests.support.fake_clock import FakeClock
from tests.support.fake_executor import FakeExecutor

EXIT_ZERO = Outcome("completed", "exit_zero", exit_code=0)


@pytest.fixture
async def make():
    """Managers over a fake executor that stands in for the process one (its tasks are held);
    every one is shut down after the test."""
    made: list[TaskManager] = []

    def build(*executors: FakeExecutor) -> TaskManager:
        made.append(TaskManager(list(executors), Limits(), clock=FakeClock()))
        return made[-1]

    yield build
    for tasks in made:
        await tasks.shutdown()


def process_executor() -> FakeExecutor:
    fake = FakeExecutor()
    fake.name = "process"
    return fake


def spec(cwd, lang: str = "bash") -> ExecSpec:
    return ExecSpec(session_id="s", cwd=str(cwd), lang=lang, code="work", timeout_s=60)


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def end(fake: FakeExecutor, task) -> None:
    fake.end(task.id, EXIT_ZERO)
    await asyncio.wait_for(task.done.wait(), 5)


async def test_an_orphan_adopted_while_two_tasks_ran_survives_the_first_and_dies_with_the_second(tmp_path, make):
    fake = process_executor()
    tasks = make(fake)
    first, second = await tasks.exec(spec(tmp_path)), await tasks.exec(spec(tmp_path))
    await settle()
    orphan = (4242, 1000)
    assert tasks.adopted.observe([orphan]) == []
    assert tasks.adopted.attributed(orphan) == {first.id, second.id}
    await end(fake, first)
    assert tasks.adopted.observe([orphan]) == []  # the second may have left it: it lives on
    assert len(tasks.adopted) == 1
    await end(fake, second)
    assert tasks.adopted.observe([orphan]) == [orphan]
    assert len(tasks.adopted) == 0 and tasks.adopted.observe([]) == []  # due once, then forgotten


async def test_an_orphan_first_seen_after_its_task_ended_is_due_at_once(tmp_path, make):
    # The usual escapee: adopted the instant its task's root exits, listed at the next sweep.
    fake = process_executor()
    tasks = make(fake)
    task = await tasks.exec(spec(tmp_path))
    await settle()
    await end(fake, task)
    assert tasks.adopted.observe([(5151, 7)]) == [(5151, 7)]


async def test_a_killed_task_releases_its_orphans_and_a_later_task_does_not_hold_them(tmp_path, make):
    fake = process_executor()
    tasks = make(fake)
    task = await tasks.exec(spec(tmp_path))
    await settle()
    orphan = (6161, 9)
    tasks.adopted.observe([orphan])
    later = await tasks.exec(spec(tmp_path))  # started after the orphan was attributed
    await settle()
    await tasks.kill(task, forget=False)
    assert tasks.adopted.observe([orphan]) == [orphan]
    assert later.state == "running"


async def test_a_recycled_pid_is_a_new_orphan_with_its_own_tasks(tmp_path, make):
    fake = process_executor()
    tasks = make(fake)
    first = await tasks.exec(spec(tmp_path))
    await settle()
    tasks.adopted.observe([(7171, 1)])
    await end(fake, first)
    assert tasks.adopted.observe([]) == [(7171, 1)]
    second = await tasks.exec(spec(tmp_path))
    await settle()
    assert tasks.adopted.observe([(7171, 2)]) == []  # same pid, another process: held by the running task
    assert tasks.adopted.attributed((7171, 2)) == {second.id}


async def test_only_process_tasks_hold_orphans(tmp_path, make):
    # A browser or serial task spawns nothing of its own: an orphan cannot be its.
    other = FakeExecutor()
    tasks = make(other)
    task = await tasks.exec(spec(tmp_path, lang="browser"))
    await settle()
    assert task.state == "running"
    assert tasks.adopted.observe([(8181, 3)]) == [(8181, 3)]


async def test_runner_stop_takes_every_orphan_still_held(tmp_path, make):
    fake = process_executor()
    tasks = make(fake)
    await tasks.exec(spec(tmp_path))
    await settle()
    tasks.adopted.observe([(9191, 4), (9292, 5)])
    assert sorted(tasks.adopted.take_all()) == [(9191, 4), (9292, 5)]
    assert len(tasks.adopted) == 0
