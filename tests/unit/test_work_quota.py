"""The wait's bounds, on the runner's side (runner/core/work/quota.py) with a fake task's output:
a reset more than a day away is held (a person's call), --no-quota-wait never looks."""

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from runner.core.work import quota
from runner.core.work.model import Failed, ItemRun, Run

NOW = 1_800_000_000.0


@dataclass
class Read:
    chunks: list


class Tasks:
    def __init__(self, text: str) -> None:
        self.text = text

    def read(self, task, cursor, max_bytes):
        return Read([("stderr", self.text[cursor:cursor + max_bytes])])


def attempts(text: str, **run) -> SimpleNamespace:
    r = Run(id="r", workspace="/w", worker="claude-code", parallel=1, afk=False, merge="ff", branch="main",
            base="b", started_at=NOW, stall_min=10.0, **run)
    return SimpleNamespace(run=r, p=SimpleNamespace(tasks=Tasks(text), clock=lambda: NOW))


def task(text: str) -> SimpleNamespace:
    return SimpleNamespace(buffer=SimpleNamespace(end=len(text)))


async def test_a_reset_more_than_a_day_away_is_held_with_the_retry():
    text = f"Claude AI usage limit reached|{int(NOW + 25 * 3600)}"
    it = ItemRun(id="w1", subject="s", state="running")
    with pytest.raises(Failed) as held:
        await quota.judge(attempts(text), it, task(text))
    assert (held.value.state, held.value.reason) == ("blocked", "usage_limit")
    assert "more than 24 h away" in held.value.message and "plugkit work --items w1" in held.value.message
    assert it.state == "running" and it.quota_until is None  # not parked


async def test_no_quota_wait_never_reads_the_limit():
    text = f"Claude AI usage limit reached|{int(NOW + 60)}"
    it = ItemRun(id="w1", subject="s", state="running")
    assert await quota.judge(attempts(text, quota_wait=False), it, task(text)) is None
    assert it.state == "running"


async def test_an_ordinary_failure_is_left_to_the_two_pass_rule():
    text = "FAILED tests/test_x.py::test_y - assert 1 == 2"
    it = ItemRun(id="w1", subject="s", state="running")
    assert await quota.judge(attempts(text), it, task(text)) is None
