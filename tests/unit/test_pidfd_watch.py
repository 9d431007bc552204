"""runner/system/pidfd_watch.py: the kernel tells the loop when a process ends (a pidfd), with
real processes: a kill is seen, a zombie counts as ended, a cancelled watch never fires, and a
process that does not exist is refused up front."""

import asyncio
import subprocess
import sys

import pytest

from runner.system import pidfd_watch


async def _fired(seen: asyncio.Event) -> bool:
    try:
        async with asyncio.timeout(60):
            await seen.wait()
    except TimeoutError:
        return False
    return True


async def test_a_killed_process_is_seen_ending_even_as_a_zombie():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    seen = asyncio.Event()
    try:
        w = pidfd_watch.watch(child.pid, seen.set)
        await asyncio.sleep(0)
        assert not seen.is_set() and w.active
        child.kill()  # not waited for: a zombie until the end of the test
        assert await _fired(seen)
        assert not w.active
    finally:
        child.kill()
        child.wait()


async def test_a_cancelled_watch_never_fires():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    fired = []
    try:
        w = pidfd_watch.watch(child.pid, lambda: fired.append(1))
        w.cancel()
        w.cancel()  # twice: nothing
        child.kill()
        child.wait()
        other, later = subprocess.Popen(["true"]), asyncio.Event()
        pidfd_watch.watch(other.pid, later.set)
        assert await _fired(later)  # a later watch fired, on a loop that ran past the first one's end
        other.wait()
        assert fired == []
    finally:
        child.kill()
        child.wait()


def test_a_process_that_does_not_exist_is_refused():
    dead = subprocess.Popen(["true"])
    dead.wait()

    async def go():
        pidfd_watch.watch(dead.pid, lambda: None)

    with pytest.raises(ProcessLookupError):
        asyncio.run(go())
