"""Mutables: named unknowns, and how a witnessed task's output resolves one.

A mutable is KNOWN only when a task the runner ran and saw finish produced its value;
the agent names the task and where in its output the value is (whole output, a line, a
regex), never the value. A failed attempt — the task did not exit 0, the value is not
there, or it differs from `expected` — counts; the second failed attempt in a row
(MAX_ATTEMPTS) sends the workspace back to PLAN, since trying the same approach a third
time is what the discipline exists to stop.
"""

import re
from dataclasses import dataclass
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from plugkit.lifecycle.errors import Conflict, Invalid
from plugkit.patterns import BadPattern, Pattern, compile_client_pattern

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$"
MAX_ATTEMPTS = 2
MAX_VALUE_CHARS = 4096


class Mutable(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(pattern=NAME_PATTERN)
    description: str = ""
    expected: Optional[str] = None
    value: Optional[str] = None
    status: Literal["UNKNOWN", "KNOWN"] = "UNKNOWN"
    attempts: int = 0  # failed witnessed attempts since it was added (or since the last replan)
    resolved_by: Optional[str] = None  # the evidence receipt id of the resolving attempt
    last_failure: Optional[str] = None


@dataclass(frozen=True)
class Witness:
    """What the runner saw of one finished task (never anything the agent typed)."""

    task_id: int
    state: str
    exit_code: Optional[int]
    output: str  # stdout and stderr, interleaved as captured
    truncated: bool  # part of the output was dropped (cap) or not kept (ledger tail)


@dataclass(frozen=True)
class Attempt:
    value: Optional[str]
    ok: bool
    reason: str  # why it failed, or "" when ok


@dataclass(frozen=True)
class Outcome:
    known: bool
    failed: bool
    attempts: int  # failed attempts counted, including this one
    retreat: bool  # the two-attempt rule fired: back to PLAN


def check_selector(line: Optional[int], regex: Optional[str]) -> Optional[Pattern]:
    """Refused before any attempt is counted: a malformed request is not a witnessed failure."""
    if line is not None and regex is not None:
        raise Invalid("name a line or a regex, not both")
    if line == 0:
        raise Invalid("lines count from 1 (or from -1 for the last line)")
    if regex is None:
        return None
    try:
        return compile_client_pattern(regex, multiline=True)
    except BadPattern as exc:
        raise Invalid(f"regex: {exc}") from None


def extract(output: str, line: Optional[int], pattern: Optional[Pattern]) -> Optional[str]:
    """The value at the named place, stripped; None when the output has no such place."""
    if line is not None:
        lines = output.splitlines()
        index = line - 1 if line > 0 else len(lines) + line
        return lines[index].strip() if 0 <= index < len(lines) else None
    if pattern is not None:
        match = pattern.search(output)
        if match is None:
            return None
        return (match.group(1) if pattern.groups else match.group(0)).strip()
    return output.strip()


def judge(m: Mutable, w: Witness, line: Optional[int], regex: Optional[str]) -> Attempt:
    pattern = check_selector(line, regex)
    if m.status == "KNOWN":
        raise Conflict(f"mutable {m.name} is already KNOWN ({m.value!r}, receipt {m.resolved_by}); "
                       "add a new mutable for a new question")
    if w.truncated and pattern is None:
        # Line numbers and "the whole output" mean nothing once the start is gone.
        raise Conflict(f"task_{w.task_id}'s output was truncated; name the value with a regex")
    if w.state != "completed" or w.exit_code != 0:
        code = "" if w.exit_code is None else f" with exit code {w.exit_code}"
        return Attempt(None, False, f"task_{w.task_id} ended {w.state}{code}")
    value = extract(w.output, line, pattern)
    if value is None:
        where = f"line {line}" if line is not None else f"match for {regex!r}"
        return Attempt(None, False, f"task_{w.task_id}'s output has no {where}")
    if len(value) > MAX_VALUE_CHARS:
        raise Conflict(f"the value is {len(value)} characters (at most {MAX_VALUE_CHARS}); "
                       "name a line or a regex group")
    if m.expected is not None and value != m.expected:
        return Attempt(value, False, f"value {value!r} differs from expected {m.expected!r}")
    return Attempt(value, True, "")


def apply(m: Mutable, attempt: Attempt, receipt_id: str) -> Outcome:
    """Record an attempt on the mutable; says whether the two-attempt rule fired."""
    if attempt.ok:
        m.status, m.value, m.resolved_by, m.last_failure = "KNOWN", attempt.value, receipt_id, None
        return Outcome(known=True, failed=False, attempts=m.attempts, retreat=False)
    m.attempts += 1
    m.last_failure = f"{attempt.reason} (receipt {receipt_id})"
    counted = m.attempts
    retreat = counted >= MAX_ATTEMPTS
    if retreat:
        m.attempts = 0  # a fresh budget for the approach the replanning produces
    return Outcome(known=False, failed=True, attempts=counted, retreat=retreat)


def new(name: str, expected: Optional[str], description: str, existing: dict[str, Mutable]) -> Mutable:
    if not re.match(NAME_PATTERN, name):
        raise Invalid(f"mutable name {name!r}: letters, digits, _ . : - (at most 64), not starting with a digit")
    if name in existing:
        raise Conflict(f"mutable {name} already exists ({existing[name].status})")
    return Mutable(name=name, expected=expected, description=description)
