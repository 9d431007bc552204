"""TaskManager with a FakeExecutor and a FakeClock: kill intent against timeout, double kills,
kills that arrive while a step is still starting, and the running-task cap under concurrent exec.
No process, no sleep: time moves when the test says so."""

import asyncio

import pytest

from plugkit.config import Limits
from plugkit.refusals import Conflict, Invalid, LimitReached, NotFound
from runner.core.tasks.manager import TaskManager
from runner.executors.base import ExecSpec, Outcome
from tests.support.fake_clock import FakeClock
from tests.support.fake_executor import FakeExecutor, settle


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake() -> FakeExecutor:
    return FakeExecutor()


@pytest.fixture
async def managers():
    """Every manager a test makes is shut down after it: no supervisor outlives its test."""
    made: list[TaskManager] = []
    yield made
    for tasks in made:
        await tasks.shutdown()


@pytest.fixture
def manager(managers):
    def make(fake: FakeExecutor, clock: FakeClock, **limits) -> TaskManager:
        managers.append(TaskManager([fake], Limits(**limits), clock=clock))
        return managers[-1]

    return make


def spec(cwd, session: str = "s", timeout_s: float = 10.0, code: str = "work") -> ExecSpec:
    return ExecSpec(session_id=session, cwd=str(cwd), lang="fake", code=code, timeout_s=timeout_s)


# --- timeout vs kill: the first intent wins --------------------------------------------

async def test_timeout_kills_the_task_when_its_time_is_up_and_not_before(tmp_path, fake, clock, manager):
    tasks = manager(fake, clock)
    task = await tasks.exec(spec(tmp_path, timeout_s=5))
    await settle()
    clock.advance(4.999)
    await settle()
    assert task.state == "running" and fake.runs[task.id].kills == 0
    clock.advance(0.002)
    await asyncio.wait_for(task.done.wait(), 5)
    assert (task.state, task.reason, task.signal) == ("timed_out", "timeout", 9)
    assert fake.runs[task.id].kills == 1
    assert "timed out" in tasks.read(task, 0, 1 << 16).chunks[-1][1]
    assert task.ended_at == clock.now  # the end is stamped by the manager's clock


async def test_kill_before_the_timeout_stays_a_kill_and_disarms_the_timer(tmp_path, fake, clock, manager):
    tasks = manager(fake, clock)
    task = await tasks.exec(spec(tmp_path, timeout_s=5))
    await settle()
    await tasks.kill(task, forget=False)
    assert (task.state, task.reason) == ("killed", "killed")
    assert clock.pending() == 0
    clock.advance(10)
    await settle()
    assert (task.state, task.reason) == ("killed", "killed") and fake.runs[task.id].kills == 1


async def test_kill_after_the_timeout_fired_does_not_rewrite_why_it_ended(tmp_path, fake, clock, manager):
    tasks = manager(fake, clock)
    task = await tasks.exec(spec(tmp_path, timeout_s=1))
    await settle()
    clock.advance(1)  # the timeout's kill is now in flight
    await tasks.kill(task, forget=False)  # returns once the task has ended
    assert (task.state, task.reason) == ("timed_out", "timeout")
    assert fake.runs[task.id].kills == 1


async def test_double_kill_kills_once_and_both_callers_see_the_end(tmp_path, fake, clock, manager):
    tasks = manager(fake, clock)
    task = await tasks.exec(spec(tmp_path))
    await settle()
    await asyncio.gather(tasks.kill(task, forget=False), tasks.kill(task, forget=False))
    assert (task.state, task.reason) == ("killed", "killed")
    assert fake.runs[task.id].kills == 1
    await tasks.kill(task, forget=False)  # a third, after the end: nothing to do
    assert fake.runs[task.id].kills == 1


async def test_a_requested_kill_wins_over_how_the_process_happened_to_end(tmp_path, fake, clock, manager):
    tasks = manager(fake, clock)
    task = await tasks.exec(spec(tmp_path))
    await settle()
    killing = asyncio.ensure_future(tasks.kill(task, forget=False))
    fake.end(task.id, Outcome("completed", "exit_zero", exit_code=0))  # it exited 0 meanwhile
    await killing
    assert (task.state, task.reason, task.exit_code) == ("killed", "killed", 0)


async def test_a_task_that_ends_by_itself_keeps_its_own_outcome(tmp_path, fake, clock, manager):
    tasks = manager(fake, clock)
    task = await tasks.exec(spec(tmp_path))
    await settle()
    fake.end(task.id, Outcome("failed", "exit_nonzero", exit_code=3, message="task exited with code 3"))
    await task.done.wait()
    assert (task.state, task.reason, task.exit_code, task.message) == ("failed", "exit_nonzero", 3,
                                                                      "task exited with code 3")
    assert clock.pending() == 0  # its timeout was disarmed


async def test_kill_while_the_step_is_still_starting_kills_it_as_soon_as_it_starts(tmp_path, clock, manager):
    fake = FakeExecutor(start=False)
    tasks = manager(fake, clock)
    task = await tasks.exec(spec(tmp_path))
    await settle()
    killing = asyncio.ensure_future(tasks.kill(task, forget=False))
    await settle()
    assert not killing.done() and fake.runs[task.id].kills == 0  # nothing to kill yet
    fake.started(task.id)
    await asyncio.wait_for(killing, 5)
    assert (task.state, task.reason) == ("killed", "killed") and fake.runs[task.id].kills == 1


# --- the running-task cap under concurrent exec (issue 17.9) ----------------------------

async def test_concurrent_execs_never_overshoot_the_running_task_cap(tmp_path, fake, clock, manager):
    """Every exec awaits (ids, prepare) between its limit check and its task's birth: all of
    them pass a check that only counts live tasks. The slot is taken before the first await."""
    tasks = manager(fake, clock, running_tasks=3, tasks_per_session=100)
    fake.hold = asyncio.Event()
    attempts = [asyncio.ensure_future(tasks.exec(spec(tmp_path, session=f"s{i % 7}"))) for i in range(40)]
    await settle()
    assert fake.prepared == 3  # the other 37 were refused before reaching prepare
    fake.hold.set()
    results = await asyncio.gather(*attempts, return_exceptions=True)
    started = [r for r in results if not isinstance(r, Exception)]
    refused = [r for r in results if isinstance(r, Exception)]
    assert len(started) == 3 and len(tasks.running()) == 3
    assert len(refused) == 37 and all(isinstance(r, LimitReached) for r in refused)
    assert "limit 3" in refused[0].message
    for task in started:
        await tasks.kill(task, forget=False)
    assert (await tasks.exec(spec(tmp_path))).state in ("pending", "running")  # slots came back


async def test_concurrent_execs_never_overshoot_the_per_session_cap(tmp_path, fake, clock, manager):
    tasks = manager(fake, clock, running_tasks=100, tasks_per_session=2)
    fake.hold = asyncio.Event()
    mine = [asyncio.ensure_future(tasks.exec(spec(tmp_path, session="a"))) for _ in range(10)]
    other = asyncio.ensure_future(tasks.exec(spec(tmp_path, session="b")))
    await settle()
    fake.hold.set()
    results = await asyncio.gather(*mine, return_exceptions=True)
    assert sum(not isinstance(r, Exception) for r in results) == 2
    assert all(isinstance(r, LimitReached) and "this session" in r.message
               for r in results if isinstance(r, Exception))
    assert (await other).session.session_id == "b"  # another session is not held back


async def test_a_refused_prepare_gives_its_slot_back(tmp_path, clock, manager):
    fake = FakeExecutor(refuse=Invalid("no such language"))
    tasks = manager(fake, clock, running_tasks=1)
    for _ in range(3):  # with the slot leaked, the second attempt would hit the limit instead
        with pytest.raises(Invalid):
            await tasks.exec(spec(tmp_path))
    assert tasks.snapshot()["slots"]["taken"] == 0


async def test_a_cancelled_exec_gives_its_slot_back(tmp_path, fake, clock, manager):
    tasks = manager(fake, clock, running_tasks=1)
    fake.hold = asyncio.Event()
    attempt = asyncio.ensure_future(tasks.exec(spec(tmp_path)))
    await settle()
    attempt.cancel()  # the caller went away while prepare ran
    with pytest.raises(asyncio.CancelledError):
        await attempt
    fake.hold.set()
    assert (await tasks.exec(spec(tmp_path))).id


# --- refusals by kind, never wire codes -------------------------------------------------

async def test_bad_requests_are_refused_before_any_task_exists(tmp_path, fake, clock, manager):
    tasks = manager(fake, clock)
    with pytest.raises(Invalid, match="code is empty"):
        await tasks.exec(spec(tmp_path, code="  \n"))
    with pytest.raises(Invalid, match="not a directory"):
        await tasks.exec(spec(tmp_path / "missing"))
    assert fake.prepared == 0 and tasks.all_tasks() == []


async def test_another_sessions_task_is_not_found_exactly_like_an_unknown_id(tmp_path, fake, clock, manager):
    tasks = manager(fake, clock)
    task = await tasks.exec(spec(tmp_path, session="mine"))
    with pytest.raises(NotFound) as theirs:
        await tasks.lookup("theirs", str(tmp_path), task.id)
    with pytest.raises(NotFound) as unknown:
        await tasks.lookup("mine", str(tmp_path), task.id + 1000)
    assert theirs.value.message.replace(str(task.id), "N") == unknown.value.message.replace(
        str(task.id + 1000), "N")
    assert await tasks.find(task.id) is task


async def test_input_reaches_the_run_and_a_finished_task_takes_none(tmp_path, fake, clock, manager):
    tasks = manager(fake, clock)
    task = await tasks.exec(spec(tmp_path))
    await settle()
    await tasks.write_input(task, "hello", eof=True)
    assert bytes(fake.runs[task.id].input) == b"hello"
    with pytest.raises(Conflict, match="stdin is already closed"):
        await tasks.write_input(task, "more", eof=False)
    await tasks.kill(task, forget=False)
    with pytest.raises(Conflict, match="takes no more input"):
        await tasks.write_input(task, "late", eof=False)


async def test_input_sent_while_the_task_is_starting_waits_for_its_process(tmp_path, fake, clock, manager):
    # `exec --wait 0` answers before the process exists; the agent's next call types into it.
    tasks = manager(fake, clock)
    task = await tasks.exec(spec(tmp_path))
    assert task.execution is None and task.state == "pending"
    await tasks.write_input(task, "early", eof=False)
    assert bytes(fake.runs[task.id].input) == b"early"


# --- the TaskIO port wakes waiters ------------------------------------------------------

async def test_every_write_through_the_port_wakes_a_waiter(tmp_path, fake, clock, manager):
    tasks = manager(fake, clock)
    task = await tasks.exec(spec(tmp_path))
    await settle()
    io = fake.ios[task.id]
    waiting = asyncio.ensure_future(tasks.wait(task, 30, "ready", None, None))
    await settle()
    io.write("stdout", b"starting\n")
    await settle()
    assert not waiting.done()
    io.write_text("stderr", "ready\n")
    waited = await asyncio.wait_for(waiting, 5)
    assert waited.matched and not waited.timed_out
    # A partial UTF-8 character is held back until its stream ends; the flush wakes waiters too.
    waiting = asyncio.ensure_future(tasks.wait(task, 30, "é", None, 0))
    io.write("stdout", "é".encode()[:1])
    await settle()
    assert not waiting.done()
    io.write("stdout", "é".encode()[1:])
    assert (await asyncio.wait_for(waiting, 5)).matched
    # A stream that ends mid-character (a pipe closing): the flush writes what was held back
    # and wakes waiters too (the process executor's flush used to write without waking).
    waiting = asyncio.ensure_future(tasks.wait(task, 30, "\ufffd", None, 0))
    io.write("stderr", b"\xc3")
    await settle()
    assert not waiting.done()
    io.flush("stderr")
    assert (await asyncio.wait_for(waiting, 5)).matched
    with pytest.raises(Invalid, match="not both"):
        await tasks.wait(task, 1, "a", "b", None)
    await tasks.kill(task, forget=False)


def test_the_port_shows_an_executor_nothing_of_the_task_but_its_io(tmp_path):
    from runner.core.tasks.output import OutputBuffer
    from runner.core.tasks.task import SessionKey, Task, TaskPort

    task = Task(id=3, session=SessionKey("s", str(tmp_path)), lang="bash", buffer=OutputBuffer(64))
    port = TaskPort(task, lambda run: None)
    assert (port.id, port.session, port.finished) == (3, task.session, False)
    with pytest.raises(AttributeError):
        port.buffer  # noqa: B018 - the buffer is the core's
    with pytest.raises(AttributeError):
        port.state = "completed"  # no way to finish a task but returning an Outcome


async def test_the_runner_shutdown_ends_running_tasks_and_closes_executors(tmp_path, fake, clock, manager):
    tasks = manager(fake, clock)
    task = await tasks.exec(spec(tmp_path))
    await settle()
    await tasks.shutdown()
    assert (task.state, task.reason) == ("killed", "runner_shutdown") and fake.closed


async def test_session_end_kills_its_tasks_and_releases_the_executors_hold(tmp_path, fake, clock, manager):
    tasks = manager(fake, clock)
    mine = [await tasks.exec(spec(tmp_path, session="a")) for _ in range(2)]
    other = await tasks.exec(spec(tmp_path, session="b"))
    await settle()
    assert sorted(await tasks.end_session("a", str(tmp_path))) == sorted(t.id for t in mine)
    assert all(t.reason == "session_end" for t in mine) and other.state == "running"
    assert [k.session_id for k in fake.ended_sessions] == ["a"]
    assert [s.key.session_id for s in tasks.sessions()] == ["b"]
