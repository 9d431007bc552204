"""kill_tree, find_tagged and child_env against real fixture programs: nothing a task starts may survive."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from runner.system import tags
from runner.system.kill import find_tagged, kill_runner_tasks, kill_tree
from tests.support.procs import wait_gone

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
GRACE_S = 0.2

# Forks a setsid'd, TERM-ignoring escapee every few ms until killed: children
# keep appearing while kill_tree is signalling, so only a re-scan catches them.
FORK_STORM = """
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
for _ in range(300):
    if os.fork() == 0:
        os.setsid()
        while True:
            time.sleep(3600)
    time.sleep(0.005)
while True:
    time.sleep(3600)
"""


class Spawner:
    """Starts programs as tagged task roots; at teardown kills what is left and waits every Popen."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[str]] = []
        self.runner_ids: set[str] = set()
        self.create_times: dict[int, float] = {}

    def start(self, argv: list[str], *, runner_id: str, task_id: str, tagged: bool = True,
              home: str | None = None) -> subprocess.Popen[str]:
        task_tags = {tags.RUNNER_ID: runner_id, tags.TASK_ID: task_id}
        if home is not None:
            task_tags[tags.HOME] = home
        env = tags.child_env(os.environ, None, task_tags if tagged else {})
        proc = subprocess.Popen(
            [sys.executable, *argv], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            env=env, start_new_session=True, text=True, cwd=ROOT,
        )
        self.procs.append(proc)
        self.runner_ids.add(runner_id)
        self.create_times[proc.pid] = psutil.Process(proc.pid).create_time()
        return proc

    def fixture(self, name: str, *args: str, **kw) -> subprocess.Popen[str]:
        return self.start([str(FIXTURES / name), *args], **kw)

    def root(self, proc: subprocess.Popen[str]) -> tuple[int, float]:
        return proc.pid, self.create_times[proc.pid]

    def close(self) -> None:
        for proc in self.procs:
            # Not yet waited, so the pid (and group id) is still ours to signal.
            if proc.returncode is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for runner_id in self.runner_ids:
            kill_runner_tasks(runner_id, grace_s=0)
        for proc in self.procs:
            proc.wait(timeout=10)
            proc.stdout.close()


@pytest.fixture
def spawner():
    s = Spawner()
    yield s
    s.close()


@pytest.fixture
def runner_id() -> str:
    return f"test-{uuid.uuid4().hex}"


def read_line(proc: subprocess.Popen[str], timeout: float = 10.0) -> str:
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise AssertionError(f"pid {proc.pid} printed nothing in {timeout}s")
    return proc.stdout.readline().strip()


def gone(pid: int) -> bool:
    """Dead or a zombie now (for what must still be alive: a check at once)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def kill_task(spawner: Spawner, proc, runner_id: str, task_id: str):
    return kill_tree(pgid=proc.pid, root=spawner.root(proc), runner_id=runner_id,
                     task_id=task_id, grace_s=GRACE_S)


def test_kill_tree_sigkills_child_that_ignores_term(spawner, runner_id):
    proc = spawner.fixture("ignores_term.py", runner_id=runner_id, task_id="1")
    assert read_line(proc) == "ready"

    report = kill_task(spawner, proc, runner_id, "1")

    assert proc.pid in report.terminated and proc.pid in report.killed
    assert report.survivors == ()
    assert report.elapsed_s >= GRACE_S
    assert proc.wait(timeout=5) == -signal.SIGKILL


def test_kill_tree_catches_double_forked_setsid_daemon(spawner, runner_id):
    proc = spawner.fixture("double_fork.py", runner_id=runner_id, task_id="1")
    daemon = int(read_line(proc).removeprefix("daemon "))
    assert proc.wait(timeout=5) == 0
    assert os.getpgid(daemon) != proc.pid  # out of reach of killpg

    report = kill_task(spawner, proc, runner_id, "1")

    assert daemon in report.terminated
    assert wait_gone(daemon)


def test_kill_tree_catches_setsid_escapee(spawner, runner_id):
    proc = spawner.fixture("setsid_escape.py", runner_id=runner_id, task_id="1")
    child = int(read_line(proc).removeprefix("child "))
    assert os.getsid(child) == child

    report = kill_task(spawner, proc, runner_id, "1")

    assert {proc.pid, child} <= set(report.terminated)
    assert wait_gone(child)
    assert proc.wait(timeout=5) == -signal.SIGTERM


def test_kill_tree_kills_forked_group(spawner, runner_id):
    proc = spawner.fixture("forks_children.py", "4", runner_id=runner_id, task_id="1")
    assert read_line(proc) == "ready"
    children = [c.pid for c in psutil.Process(proc.pid).children()]
    assert len(children) == 4

    kill_task(spawner, proc, runner_id, "1")

    assert all(wait_gone(pid) for pid in children)
    assert proc.wait(timeout=5) == -signal.SIGTERM


def test_kill_tree_reaches_untagged_group_members_through_killpg(spawner, runner_id):
    proc = spawner.fixture("forks_children.py", "3", runner_id=runner_id, task_id="1", tagged=False)
    assert read_line(proc) == "ready"
    children = [c.pid for c in psutil.Process(proc.pid).children()]

    report = kill_task(spawner, proc, runner_id, "1")

    assert report.terminated == (proc.pid,)  # the root by pid; the rest only via the group
    assert all(wait_gone(pid) for pid in children)
    proc.wait(timeout=5)


def test_kill_tree_catches_children_forked_during_the_kill(spawner, runner_id):
    proc = spawner.start(["-c", FORK_STORM], runner_id=runner_id, task_id="1")
    assert read_line(proc) == "ready"

    report = kill_task(spawner, proc, runner_id, "1")

    assert report.survivors == ()
    assert len(report.killed) > 1
    assert find_tagged(runner_id) == []
    assert proc.wait(timeout=5) == -signal.SIGKILL


def test_kill_tree_spares_other_tasks_and_other_runners(spawner, runner_id):
    mine = spawner.fixture("ignores_term.py", runner_id=runner_id, task_id="1")
    # Ids sharing a prefix with ours: a substring match would take them too.
    sibling = spawner.fixture("ignores_term.py", runner_id=runner_id, task_id="10")
    stranger = spawner.fixture("ignores_term.py", runner_id=runner_id + "0", task_id="1")
    for proc in (mine, sibling, stranger):
        assert read_line(proc) == "ready"

    report = kill_task(spawner, mine, runner_id, "1")

    assert set(report.terminated) == {mine.pid}
    assert mine.wait(timeout=5) == -signal.SIGKILL
    assert not gone(sibling.pid) and not gone(stranger.pid)


def test_kill_tree_does_not_signal_recycled_root_pid(spawner, runner_id):
    # Tagged for another runner, so only the root / group paths could reach it.
    victim = spawner.fixture("forks_children.py", "0", runner_id=runner_id + "-other", task_id="1")
    assert read_line(victim) == "ready"
    pid, created = spawner.root(victim)
    stale = (pid, created - 100.0)

    by_pid = kill_tree(pgid=None, root=stale, runner_id=runner_id, task_id="1", grace_s=0.05)
    by_group = kill_tree(pgid=pid, root=stale, runner_id=runner_id, task_id="1", grace_s=0.05)

    assert by_pid.terminated == by_group.terminated == ()
    assert not gone(pid)
    # Control: with the true create_time the same call does reach it.
    kill_tree(pgid=pid, root=(pid, created), runner_id=runner_id, task_id="1", grace_s=GRACE_S)
    assert victim.wait(timeout=5) == -signal.SIGTERM


def test_kill_tree_never_signals_its_own_process_group():
    # Run in a throwaway session: if the guard failed, only that process would die.
    code = (
        "import os, psutil\n"
        "from runner.system.kill import kill_tree\n"
        "me = (os.getpid(), psutil.Process().create_time())\n"
        "for pgid in (os.getpgrp(), 0, 1):\n"
        "    kill_tree(pgid=pgid, root=me, runner_id='nobody-' + str(os.getpid()),"
        " task_id='1', grace_s=0.01)\n"
        "print('survived', flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, start_new_session=True,
                          capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout.strip()) == (0, "survived"), done.stderr


def test_kill_runner_tasks_kills_every_task_of_that_runner_only(spawner, runner_id):
    tasks = [spawner.fixture("ignores_term.py", runner_id=runner_id, task_id=t) for t in "12"]
    other = spawner.fixture("ignores_term.py", runner_id=runner_id + "-other", task_id="1")
    for proc in (*tasks, other):
        assert read_line(proc) == "ready"

    report = kill_runner_tasks(runner_id, grace_s=GRACE_S)

    assert set(report.killed) == {p.pid for p in tasks}
    assert [p.wait(timeout=5) for p in tasks] == [-signal.SIGKILL] * 2
    assert not gone(other.pid)


def test_find_tagged_filters_by_task_and_home_and_skips_zombies(spawner, runner_id):
    one = spawner.fixture("ignores_term.py", runner_id=runner_id, task_id="1", home="/h/a")
    two = spawner.fixture("ignores_term.py", runner_id=runner_id, task_id="2", home="/h/b")
    for proc in (one, two):
        assert read_line(proc) == "ready"

    assert sorted(p.pid for p in find_tagged(runner_id)) == sorted([one.pid, two.pid])
    assert [p.pid for p in find_tagged(runner_id, "2")] == [two.pid]
    assert [p.pid for p in find_tagged(runner_id, home="/h/a")] == [one.pid]
    assert find_tagged(runner_id, "1", home="/h/b") == []

    os.kill(two.pid, signal.SIGKILL)
    # Not waited yet: a zombie still has its pid but is not a live process.
    deadline = time.monotonic() + 5
    while not gone(two.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [p.pid for p in find_tagged(runner_id)] == [one.pid]


def test_read_tags_sees_task_tags_but_never_the_token(spawner, runner_id, monkeypatch):
    monkeypatch.setenv("PLUGKIT_TOKEN", "secret")
    proc = spawner.fixture("ignores_term.py", runner_id=runner_id, task_id="7")
    assert read_line(proc) == "ready"

    seen = tags.read_tags(proc.pid)

    assert seen is not None
    assert (seen[tags.RUNNER_ID], seen[tags.TASK_ID]) == (runner_id, "7")
    assert "PLUGKIT_TOKEN" not in seen
    kill_task(spawner, proc, runner_id, "7")
    proc.wait(timeout=5)
    assert tags.read_tags(proc.pid) is None


def test_child_env_scrubs_token_from_base_and_extra():
    base = {"PATH": "/bin", "PLUGKIT_TOKEN": "s", "PLUGKIT_TOKEN_FILE": "/run/t"}
    extra = {"PLUGKIT_TOKEN": "again", "PLUGKIT_TOKENX": "x", "FOO": "1"}

    env = tags.child_env(base, extra, {tags.RUNNER_ID: "r"})

    assert env == {"PATH": "/bin", "FOO": "1", tags.RUNNER_ID: "r"}


def test_child_env_keeps_tags_authoritative():
    base = {tags.RUNNER_ID: "outer", tags.TASK_ID: "stale", tags.SESSION_ID: "s0", tags.HOME: "/h"}
    extra = {tags.RUNNER_ID: "forged", tags.TASK_ID: "99", tags.HOME: "/elsewhere"}

    env = tags.child_env(base, extra, {tags.RUNNER_ID: "r", tags.TASK_ID: "1"})

    # Stale identity from the runner's own environment is dropped, not inherited;
    # HOME is configuration and passes through unless tagged.
    assert env == {tags.RUNNER_ID: "r", tags.TASK_ID: "1", tags.HOME: "/h"}
    with pytest.raises(ValueError):
        tags.child_env(base, None, {"PLUGKIT_TOKEN": "t"})
