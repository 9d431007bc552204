"""task.wait's "waiting for input" (runner/core/tasks/stdin_watch.py) is never said of a task that is
being fed: not while input the runner was sent still sits in its buffer (the task's pipe was full),
and not when input written during the settling turns woke it. A real child blocked reading a real
pipe; the execution is a hand-written stand-in with the two faces ProcessRun offers."""

import asyncio
import os
import subprocess
import sys
import time
from types import SimpleNamespace

from runner.core.tasks import stdin_watch
from runner.system import pipe_ends, procstate

# Reads one line, then sleeps (not in a read: fed, it is no longer waiting).
READ_A_LINE = [sys.executable, "-c", "import sys, time; sys.stdin.readline(); time.sleep(60)"]


class Run:
    def __init__(self, child: subprocess.Popen, buffered: int = 0, on_look=None) -> None:
        self.child, self.buffered, self.on_look, self.looks = child, buffered, on_look, 0

    def stdin_inode(self):
        self.looks += 1
        if self.on_look is not None:
            self.on_look(self.looks)
        return procstate.pipe_inode(self.child.stdin.fileno())

    def input_buffered(self) -> int:
        return self.buffered


def _task(run: Run):
    return SimpleNamespace(finished=False, execution=run, pid=run.child.pid)


def _blocked_reader() -> subprocess.Popen:
    child = subprocess.Popen(READ_A_LINE, stdin=subprocess.PIPE)
    inode = procstate.pipe_inode(child.stdin.fileno())
    while procstate.waiting_for_input(child.pid, inode) is None:  # the event: asleep in its read
        assert child.poll() is None
        time.sleep(0.01)
    return child


def _end(child: subprocess.Popen) -> None:
    child.kill()
    child.wait()
    child.stdin.close()


def test_a_reader_with_input_still_in_the_runners_buffer_is_not_waiting():
    child = _blocked_reader()
    try:
        assert stdin_watch.waiting(_task(Run(child)))  # nothing for it anywhere: it waits
        assert not stdin_watch.waiting(_task(Run(child, buffered=4096)))  # its pipe takes that next
    finally:
        _end(child)


async def test_input_written_while_the_wait_settled_is_no_waiting_answer():
    child = _blocked_reader()
    loop = asyncio.get_running_loop()
    waiter = loop.create_future()

    def look(n: int) -> None:
        if n == 1:  # the first look sees it blocked; a line reaches it in the turns that follow
            loop.call_soon(os.write, child.stdin.fileno(), b"hello\n")
        elif not waiter.done():  # a later look: the wait goes on, and its own answer comes
            loop.call_soon(waiter.set_result, "its own answer")

    try:
        assert await stdin_watch.wait(_task(Run(child, on_look=look)), waiter, "blocked") == "its own answer"
    finally:
        _end(child)


async def test_the_write_end_says_what_the_full_pipe_has_not_taken():
    r, w = os.pipe()
    os.set_blocking(r, False)
    reader = os.fdopen(r, "rb", buffering=0)
    end = pipe_ends.WriteEnd(asyncio.get_running_loop(), os.fdopen(w, "wb", buffering=0), lambda exc: None)
    try:
        end.write(b"x" * (1 << 20))  # more than any pipe holds
        assert 0 < end.get_write_buffer_size() < 1 << 20
        got = 0
        while got < 1 << 20:  # the loop writes the rest as the reader drains the pipe
            await asyncio.sleep(0)
            try:
                got += len(os.read(r, 1 << 20))
            except BlockingIOError:
                pass
        assert end.get_write_buffer_size() == 0
    finally:
        end.close()
        reader.close()
