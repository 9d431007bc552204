"""The event lines `plugkit work --wait` prints, read off successive status answers (pure logic)."""

from client.show.work_events import EventStream, retry_hint


def item(**kw) -> dict:
    return {"id": "w1", "state": "queued", "attempt": 0, **kw}


def run(*items: dict, state: str = "running", **kw) -> dict:
    return {"id": "r1", "state": state, "items": list(items), **kw}


def feed(*runs: dict) -> list[str]:
    clock = iter(range(100))
    stream = EventStream(clock=lambda: float(next(clock)))
    return [line.split("s  ", 1)[1] for r in runs for line in stream.feed(r)]  # less the "+  1.0s" stamp


def test_each_change_is_one_line_and_nothing_repeats():
    lines = feed(run(item()),
                 run(item(state="running", attempt=1, task_id=3)),
                 run(item(state="running", attempt=1, task_id=3)),
                 run(item(state="running", attempt=1, task_id=3, verify_task_id=4)),
                 run(item(state="completed", attempt=1, task_id=3, verify_task_id=4, verify="green", landed="ab" * 20,
                          receipt="cd" * 8, reason="landed")),
                 run(item(state="completed", attempt=1, task_id=3, verify_task_id=4, verify="green", landed="ab" * 20,
                          reason="landed"), state="done"))
    assert [line.split(None, 1)[1] for line in lines] == [
        "worker started (task_3)", "worker exited; the runner's check runs (task_4)", "check green (task_4)",
        "landed as abababababab, receipt cdcdcdcdcdcd", "r1 done"]  # "run r1 done"


def test_a_spawning_retry_is_not_said_with_the_last_attempts_task():
    lines = feed(run(item(state="running", attempt=1, task_id=3)),
                 run(item(state="spawning", attempt=2, task_id=3)),
                 run(item(state="running", attempt=2, task_id=7)))
    assert [line.split(None, 1)[1] for line in lines] == ["worker started (task_3)",
                                                           "worker started (attempt 2, task_7)"]


def test_a_held_item_names_the_retry_and_its_kept_branch():
    held = item(state="blocked", reason="touches_check", message="changes its check\n--- diff", branch="plugkit/w1")
    (line,) = feed(run(held))
    assert line.startswith("w1") and "blocked/touches_check: changes its check; next: " in line
    assert retry_hint(held) == ("plugkit prd update w1 --status pending && plugkit work --items w1 "
                                "(its work is kept on branch plugkit/w1)")
    assert retry_hint(item(state="completed")) == ""
