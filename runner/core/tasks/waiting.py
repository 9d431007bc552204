"""Waiting on a task's output: until a text or pattern appears, the task ends, or time runs out."""

import asyncio
from dataclasses import dataclass
from typing import Optional

from plugkit.patterns import BadPattern, compile_client_pattern
from plugkit.refusals import Invalid
from runner.core.tasks.task import Task


@dataclass(frozen=True)
class Waited:
    """Why task.wait returned: the text appeared (where), the task ended, or time ran out."""

    matched: bool
    match_cursor: Optional[int]
    timed_out: bool


async def wait_for(task: Task, timeout_s: float, until_text: Optional[str],
                   until_regex: Optional[str], cursor: Optional[int]) -> Waited:
    """Until the text (or regex) appears after cursor (the session's read cursor without one),
    the task ends, or timeout_s passes."""
    if until_text and until_regex:
        raise Invalid("give until_text or until_regex, not both")
    try:
        pattern = compile_client_pattern(until_regex) if until_regex else None
    except BadPattern as exc:
        raise Invalid(f"until_regex: {exc}") from None
    start = task.read_cursor if cursor is None else cursor
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        wake = task.changed()
        hit = None
        if until_text:
            hit = task.buffer.find(until_text, start)
        elif pattern is not None:
            hit = task.buffer.find_regex(pattern, start)
        if hit is not None or task.finished:
            return Waited(matched=hit is not None, match_cursor=hit, timed_out=False)
        remaining = deadline - loop.time()
        if remaining <= 0:
            return Waited(matched=False, match_cursor=None, timed_out=True)
        try:
            await asyncio.wait_for(wake.wait(), remaining)
        except asyncio.TimeoutError:
            pass
