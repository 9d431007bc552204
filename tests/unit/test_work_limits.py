"""Each pinned host's usage/rate-limit message, as its own code builds it (the templates quoted from
the installed sources), is recognised with its reset time; a worker's ordinary failure is not."""

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from plugkit.work.limits import ROWS, detect

UTC = timezone.utc
NOW = datetime(2026, 11, 29, 13, 10, tzinfo=UTC).timestamp()  # a Sunday, 13:10 UTC
MID = "\u00b7"  # Claude Code's separator


def at(*args, tz=UTC) -> float:
    return datetime(*args, tzinfo=tz).timestamp()


@pytest.mark.parametrize("text,reset", [
    # hJ(e, t) = `You've hit your ${e}${t}`, t = ` · resets ${Vee(resetsAt, true)}`
    (f"You've hit your session limit {MID} resets 3pm (UTC)", at(2026, 11, 29, 15, 0)),
    (f"You've hit your weekly limit {MID} resets 3:30pm (America/New_York)",
     at(2026, 11, 29, 15, 30, tz=ZoneInfo("America/New_York"))),
    (f"You've hit your usage limit {MID} resets Dec 1, 9am (Europe/Berlin)",
     at(2026, 12, 1, 9, 0, tz=ZoneInfo("Europe/Berlin"))),
    (f"You've hit your Opus limit {MID} resets Jan 3, 2027, 12am (UTC)", at(2027, 1, 3, 0, 0)),
    (f"You're out of usage credits {MID} resets 1pm (UTC)", at(2026, 11, 30, 13, 0)),  # 1pm passed: tomorrow
    # 13:08:59 shown as 1:08pm, read at 13:10: it just passed (not tomorrow's 1:08pm)
    (f"You've hit your session limit {MID} resets 1:08pm (UTC)", at(2026, 11, 29, 13, 8)),
    ("Claude AI usage limit reached|1764428400", 1764428400.0),  # the format before 2.x
])
def test_claude_code_limits_and_their_reset(text, reset):
    found = detect("claude-code", f"working...\n{text}\n", NOW)
    assert found is not None and found.host == "claude-code" and found.reset_at == reset, found


def test_claude_code_limit_without_a_reset_is_a_limit_with_none():
    found = detect("claude-code", f"You've hit your usage limit {MID} contact your admin to increase it", NOW)
    assert found is not None and found.reset_at is None


@pytest.mark.parametrize("text,reset", [
    # retry_suffix: " Try again at {format_retry_timestamp}." ("%-I:%M %p", another day "%b %-d{th}, %Y ...")
    ("ERROR: You've hit your usage limit. Try again at 3:05 PM.", at(2026, 11, 29, 15, 5)),
    ("ERROR: You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
     "https://chatgpt.com/settings/usage to purchase more credits or try again at Dec 2nd, 2026 9:00 AM.",
     at(2026, 12, 2, 9, 0)),
    ("ERROR: You've hit your usage limit. Try again later.", None),
    ("ERROR: Quota exceeded. Check your plan and billing details.", None),
])
def test_codex_limits_in_local_time(text, reset):
    found = detect("codex", text, NOW, UTC)
    assert found is not None and found.host == "codex" and found.reset_at == reset, found


@pytest.mark.parametrize("worker,text,after", [
    ("gemini", "[API Error: You exceeded your current quota, please check your plan and billing details. "
               "Please retry in 31.5s. (Status: RESOURCE_EXHAUSTED)]", 31.5),
    ("gemini", "Quota exceeded for quota metric 'Generate Content API requests per minute'\n"
               "Suggested retry after 3600s.", 3600.0),
    ("qwen", "[API Error: 429 Rate limit reached for requests. Please try again in 20s.]\nPlease wait and "
             "try again later.", 20.0),
])
def test_gemini_and_qwen_relay_the_apis_retry_hint(worker, text, after):
    found = detect(worker, text, NOW)
    assert found is not None and found.reset_at == pytest.approx(NOW + after), found


@pytest.mark.parametrize("worker,text", [
    ("gemini", "You have exhausted your daily quota on this model."),
    ("qwen", "Qwen OAuth quota exceeded: Your free daily quota has been used up."),
])
def test_limits_with_no_reset(worker, text):
    found = detect(worker, text, NOW)
    assert found is not None and found.reset_at is None


@pytest.mark.parametrize("worker,text", [
    ("claude-code", "Error: tests failed (3 of 10)"),
    ("gemini", "flaky test: please retry in 2s"),  # a retry hint with no limit beside it
    ("command", "AssertionError: expected limit reached"),
])
def test_an_ordinary_failure_is_no_limit(worker, text):
    assert detect(worker, text, NOW) is None


def test_the_command_worker_recognises_every_hosts_message_and_only_the_tail_counts():
    assert detect("command", "ERROR: You've hit your usage limit. Try again at 3:05 PM.", NOW, UTC).host == "codex"
    old = f"You've hit your session limit {MID} resets 3pm (UTC)\n" + "x" * 10000
    assert detect("claude-code", old, NOW) is None  # long gone from the tail: not why it ended now


def test_every_host_worker_has_rows():
    from plugkit.work.workers import WORKERS
    hosts = {name for name, row in WORKERS.items() if row.program}
    assert {"claude-code", "codex", "gemini", "qwen"} <= set(ROWS), hosts
