"""The rows that turn an item's change into a run's event lines (pure logic): what the runner's
journal records and `plugkit work --wait`, `work status --follow` and `work trace` print."""

from plugkit.work.events import changes, retry_hint


def item(**kw) -> dict:
    return {"id": "w1", "state": "queued", "attempt": 0, **kw}


def said(*snapshots: dict) -> list[str]:
    out, old = [], None
    for new in snapshots:
        out += changes(old, new)
        old = new
    return out


def test_each_change_is_one_line_and_nothing_repeats():
    running = item(state="running", attempt=1, task_id=3)
    judged = {**running, "state": "verifying"}
    checking = {**judged, "verify_task_id": 4}
    landed = {**checking, "state": "completed", "reason": "landed", "verify": "green", "landed": "ab" * 20,
              "receipt": "cd" * 8}
    assert said(item(), running, running, judged, checking, {**checking, "state": "landing", "verify": "green"},
                landed, landed) == [
        "worker started (task_3)", "worker exited; the runner judges its commits", "the runner's check runs (task_4)",
        "check green (task_4)", "landed as abababababab, receipt cdcdcdcdcdcd"]


def test_a_retry_says_why_and_is_not_said_with_the_last_attempts_task():
    retry = item(state="spawning", attempt=1, task_id=3, reason="verify_failed",
                 message="attempt 1 rejected/verify_failed: `false` failed; trying once more\nlog")
    assert said(item(state="running", attempt=1, task_id=3), retry, {**retry, "attempt": 2},
                item(state="running", attempt=2, task_id=7)) == [
        "worker started (task_3)", "tried again: attempt 1 rejected/verify_failed: `false` failed; trying once more",
        "worker started (attempt 2, task_7)"]


def test_a_held_item_names_the_retry_and_its_kept_branch():
    held = item(state="blocked", reason="touches_check", message="changes its check\n--- diff", branch="plugkit/w1")
    (line,) = said(held)
    assert line.startswith("blocked/touches_check: changes its check; next: "), line
    assert retry_hint(held) == ("plugkit prd update w1 --status pending && plugkit work --items w1 "
                                "(its work is kept on branch plugkit/w1)")
    assert retry_hint(item(state="completed")) == ""
