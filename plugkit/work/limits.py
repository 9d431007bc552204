"""What each agent host prints when its model's usage or rate limit stops it, and when the limit
resets: one row per message, keyed by worker name (the names of plugkit.work.workers).

Read from the pinned hosts' own sources (~/.cache/plugkit-hosts/node_modules), as they print it
in headless mode:
- Claude Code 2.1 (`hJ`/`Vee` in its bundle): "You've hit your session limit · resets 3pm
  (Europe/Berlin)", a reset over 24 h away as "resets Dec 1, 3pm (UTC)" (a year when it differs);
  "· contact your admin ..." and no reset when none is known. Earlier versions printed
  "Claude AI usage limit reached|<epoch seconds>". Only signed in with a claude.ai subscription
  (`amp`: its 429 branch); with an API key a 429 is "... Request rejected (429) · <the API's
  message>", after its SDK's own retries: no reset named, so an ordinary failed attempt.
- Codex 0.169 (codex-rs error.rs, in the binary): "You've hit your usage limit. ... Try again at
  3:05 PM." (local time, no zone; another day: "Nov 30th, 2026 3:05 PM"), "... try again later."
  with no reset, "Quota exceeded. Check your plan and billing details." (insufficient quota).
- Gemini CLI 0.61 (classifyGoogleError): the API's own "Please retry in 31.5s" or its
  "Suggested retry after 3600s."; "You have exhausted your daily quota on this model." (none).
- Qwen Code 0.15 (parseAndFormatApiError): "Qwen OAuth quota exceeded: ..." (no reset), else the
  provider's 429 inside "[API Error: ...]": the Gemini-style retry hints above, or OpenAI's
  "Please try again in 20s".
Pure logic: text and the time it was read in, the reset out (epoch seconds) or None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Callable, Optional
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

TAIL_CHARS = 4096  # of a worker's output: its host prints the limit last, just before it exits
MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                      "Nov", "Dec"), 1)}
UNITS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0, "m": 60.0, "min": 60.0,
         "minute": 60.0, "minutes": 60.0, "h": 3600.0, "hour": 3600.0, "hours": 3600.0}

# (match, the time the text was read, the local zone) -> the reset (epoch s), or None: no reset known
Parser = Callable[[re.Match, float, tzinfo], Optional[float]]


@dataclass(frozen=True)
class Limit:
    host: str                 # whose message it was
    line: str                 # the message, one line, bounded
    reset_at: Optional[float]  # epoch seconds, None: the host named no reset time


@dataclass(frozen=True)
class Row:
    host: str
    pattern: re.Pattern
    reset: Parser


def _none(_m: re.Match, _now: float, _tz: tzinfo) -> Optional[float]:
    return None


def _after(m: re.Match, now: float, _tz: tzinfo) -> Optional[float]:
    """A relative hint: `n` `unit` after the text was read."""
    return now + float(m["n"]) * UNITS[m["unit"].lower()]


def _epoch(m: re.Match, _now: float, _tz: tzinfo) -> Optional[float]:
    return float(m["epoch"])


# A reset shown to the minute (Claude Code and Codex drop the seconds) that is read a little after
# the host printed it can lie up to a minute and a few seconds in the past: it just passed, it is
# not tomorrow's (read as tomorrow, the worker waited a whole day for a limit already over).
JUST_PASSED = timedelta(minutes=5)


def _next(when: datetime, now: datetime, dated: bool) -> float:
    """A wall-clock time with no date is the next one at or after now (a reset is never past),
    unless it just passed (JUST_PASSED)."""
    if not dated and when < now - JUST_PASSED:
        when += timedelta(days=1)
    return when.timestamp()


def _claude(m: re.Match, now: float, local: tzinfo) -> Optional[float]:
    """"3pm (UTC)", "3:30pm (America/New_York)", "Dec 1, 3pm (UTC)", "Dec 1, 2027, 3pm (UTC)"."""
    try:
        zone: tzinfo = ZoneInfo(m["zone"])
    except (ZoneInfoNotFoundError, ValueError):
        zone = local
    today = datetime.fromtimestamp(now, zone)
    hour = int(m["hour"]) % 12 + (12 if m["ampm"].lower() == "pm" else 0)
    year = int(m["year"]) if m["year"] else today.year
    month, day = (MONTHS[m["month"]], int(m["day"])) if m["month"] else (today.month, today.day)
    when = datetime(year, month, day, hour, int(m["minute"] or 0), tzinfo=zone)
    if m["month"] and not m["year"] and when < today - timedelta(days=1):
        when = when.replace(year=year + 1)  # "Jan 2" read on Dec 31
    return _next(when, today, bool(m["month"]))


def _codex(m: re.Match, now: float, local: tzinfo) -> Optional[float]:
    """"3:05 PM" (today, local time) or "Nov 30th, 2026 3:05 PM"."""
    today = datetime.fromtimestamp(now, local)
    hour = int(m["hour"]) % 12 + (12 if m["ampm"].upper() == "PM" else 0)
    if m["month"]:
        when = datetime(int(m["year"]), MONTHS[m["month"]], int(m["day"]), hour, int(m["minute"]), tzinfo=local)
    else:
        when = today.replace(hour=hour, minute=int(m["minute"]), second=0, microsecond=0)
    return _next(when, today, bool(m["month"]))


_CLAUDE_WHEN = (r"(?:(?P<month>[A-Z][a-z]{2}) (?P<day>\d{1,2}), (?:(?P<year>\d{4}), )?)?"
                r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?(?P<ampm>[ap]m) \((?P<zone>[A-Za-z0-9_+\-/]+)\)")
_CODEX_WHEN = (r"(?:(?P<month>[A-Z][a-z]{2}) (?P<day>\d{1,2})(?:st|nd|rd|th), (?P<year>\d{4}) )?"
               r"(?P<hour>\d{1,2}):(?P<minute>\d{2}) (?P<ampm>[AP]M)")
_RETRY_HINTS = (  # what the model's API says in its 429, relayed by Gemini CLI and Qwen Code
    Row("", re.compile(r"Please retry in (?P<n>\d+(?:\.\d+)?)(?P<unit>ms|s)\b"), _after),
    Row("", re.compile(r"Suggested retry after (?P<n>\d+(?:\.\d+)?)(?P<unit>ms|s)\b"), _after),
    Row("", re.compile(r"(?:Please )?try again in (?P<n>\d+(?:\.\d+)?)\s?(?P<unit>ms|s|sec|seconds?|m|min|"
                       r"minutes?|h|hours?)\b", re.I), _after),
)


def _hints(host: str) -> tuple[Row, ...]:
    return tuple(Row(host, r.pattern, r.reset) for r in _RETRY_HINTS)


# Most specific first: the first row that matches the tail decides.
ROWS: dict[str, tuple[Row, ...]] = {
    "claude-code": (
        Row("claude-code", re.compile(r"You(?:'ve hit your [\w ]*?limit|'re out of usage credits)"
                                      r"[^\n]*? \u00b7 resets " + _CLAUDE_WHEN), _claude),
        Row("claude-code", re.compile(r"Claude AI usage limit reached\|(?P<epoch>\d{9,12})"), _epoch),
        Row("claude-code", re.compile(r"You(?:'ve hit your [\w ]*?limit|'re out of usage credits)"), _none),
    ),
    "codex": (
        Row("codex", re.compile(r"You've hit your usage limit\b[^\n]*?[Tt]ry again at " + _CODEX_WHEN), _codex),
        Row("codex", re.compile(r"You've (?:hit|reached) your usage limit\b"), _none),
        Row("codex", re.compile(r"Quota exceeded\. Check your plan and billing details\."), _none),
    ),
    "gemini": (
        *_hints("gemini"),
        Row("gemini", re.compile(r"You have exhausted your daily quota on this model\."), _none),
    ),
    "qwen": (
        Row("qwen", re.compile(r"Qwen OAuth (?:quota exceeded:|free tier has been discontinued)"), _none),
        *_hints("qwen"),
    ),
}
# A relative retry hint only counts near words that say it is a limit (a test's own "retry in 2s"
# in a worker's output is not the model's quota).
LIMIT_WORDS = re.compile(r"quota|rate.?limit|RESOURCE_EXHAUSTED|429|too many requests|usage limit", re.I)
RELATIVE = frozenset({_after})


def detect(worker: str, text: str, now: float, local: Optional[tzinfo] = None) -> Optional[Limit]:
    """The limit `text` (a worker's last output) reports, by `worker`'s host rows (every host's for
    the `command` worker, which may wrap any of them); None when it reports none."""
    local = local or datetime.now().astimezone().tzinfo or timezone.utc
    tail = text[-TAIL_CHARS:]
    # Every host's for `command`: those that read a reset first (a bare "usage limit" row of one
    # host must not shadow another host's full message).
    rows = ROWS.get(worker) or sorted((r for rows in ROWS.values() for r in rows), key=lambda r: r.reset is _none)
    for row in rows:
        for m in row.pattern.finditer(tail):
            line = _line(tail, m)
            # The API's message may put the limit a line above its retry hint (Gemini's "Suggested").
            if row.reset in RELATIVE and not LIMIT_WORDS.search(tail[max(0, m.start() - 400):m.end()]):
                continue
            try:
                reset = row.reset(m, now, local)
            except (ValueError, OverflowError, KeyError):
                reset = None  # a date that does not exist: a limit, its reset unknown
            return Limit(row.host, line[:300], reset)
    return None


def _line(text: str, m: re.Match) -> str:
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", m.end())
    return " ".join(text[start:end if end >= 0 else len(text)].split())
