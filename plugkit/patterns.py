"""Client-supplied regular expressions: compiled by RE2, so every match runs in linear time.

Python's `re` backtracks: `^(a+)+$` over 34 `a`s runs for minutes while holding the GIL,
and a worker thread does not help, so one pattern from one agent wedged the whole runner
(issue 17). Every pattern that arrives over the wire (task.wait until_regex, mutable
resolve --regex, and any later one) goes through compile_client_pattern() and nowhere
near `re`. RE2 refuses what it cannot run in linear time (backreferences, lookaround,
possessive repeats); the refusal names the construct, for a -32602 the agent can act on.

`re2` is imported on the first pattern, not at import: the client's hot path and a runner
that never sees a regex do not pay for it.
"""

from __future__ import annotations

from typing import Any, Protocol

# RE2's compiled program is bounded (its default is 8 MiB); a pattern that needs more fails
# to compile instead of growing the runner.
MAX_PROGRAM_BYTES = 8 << 20


class BadPattern(ValueError):
    """The pattern cannot be compiled by RE2; str() names the construct."""


class Match(Protocol):
    def end(self, group: int = 0) -> int: ...
    def group(self, *groups: int) -> Any: ...


class Pattern(Protocol):
    groups: int

    def search(self, text: str, pos: int = 0) -> Match | None: ...


_options: Any = None


def compile_client_pattern(pattern: str, *, multiline: bool = False) -> Pattern:
    """RE2-compile `pattern`; raises BadPattern naming what RE2 does not support."""
    global _options
    import re2  # lazily: ~10 ms, paid only by a caller that has a pattern

    if _options is None:
        options = re2.Options()
        options.log_errors = False  # RE2 would print every refusal on the runner's stderr
        options.max_mem = MAX_PROGRAM_BYTES
        _options = options
    if multiline:
        pattern = "(?m)" + pattern
    try:
        return re2.compile(pattern, _options)
    except re2.error as exc:
        raise BadPattern(_reason(exc, pattern)) from None


def _reason(exc: Exception, pattern: str) -> str:
    raw = exc.args[0] if exc.args else ""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    text = text or "the pattern does not compile"
    hint = ""
    if any(word in text for word in ("perl operator", "escape sequence", "repetition operator")):
        # The usual cause: a construct that needs backtracking.
        hint = " (RE2 runs in linear time: no backreferences, lookaround or possessive repeats)"
    elif "pattern too large" in text:
        hint = " (make it smaller: a repeat count over 1000 or a huge alternation)"
    return f"{text}{hint}"
