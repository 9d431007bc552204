"""A poll (exec:status, the end of exec:sleep): the output not read yet, bounded and tail-biased.

The runner cuts what is unread to the budget (each stream keeps its newest lines, whole
lines where it can) and moves the session's cursor to the end, so the next poll costs only
what is new. What was cut stays in the runner's ring: one note names it (bytes A-B) and
the bounded next steps (render.next_steps: the next 12000 bytes, --grep, the size of --full).

For agents the text is cleaned: ANSI colour codes go and a `\\r`-overwritten progress
line keeps only its last state. At a terminal, and with --full, output is shown as written.
"""

import os
import sys
from client.show.render import size

POLL_LIMIT = 12000  # bytes per poll by default: the hook answer's size, about 3000 tokens
HEAD_SHARE = 0.25  # of a stream never shown before, the part of its budget spent on its first lines
READ_BYTES = 256 << 10
# CSI (colours, cursor moves), OSC (titles, links) and the two-byte escapes. Compiled on the first
# text holding an ESC: `re` costs ~5 ms to import, and most output has no escape at all.
ANSI_PATTERN = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
_ansi = None


def poll_limit(full: bool, cap: int | None) -> int | None:
    """None means no cap. A caller's own cap (the hooks'), else $PLUGKIT_MAX_OUTPUT, else POLL_LIMIT."""
    if full:
        return None
    return cap if cap is not None else env_cap(POLL_LIMIT)


def env_cap(default: int) -> int | None:
    """$PLUGKIT_MAX_OUTPUT, else default; None (no cap) for 0."""
    raw = os.environ.get("PLUGKIT_MAX_OUTPUT")
    try:
        value = int(raw) if raw else default
    except ValueError:
        from client.args import UsageError

        raise UsageError(f"PLUGKIT_MAX_OUTPUT must be a whole number of bytes, not {raw!r}") from None
    return value if value > 0 else None


def wants_clean(sink, full: bool) -> bool:
    """Agents read through pipes, hooks and --json; a person's terminal renders the codes."""
    return not full and not getattr(sink, "raw", False)


def collapse(text: str) -> str:
    """Colour codes out; of each `\\r`-overwritten line only the last state."""
    global _ansi
    if "\x1b" in text:
        if _ansi is None:
            import re

            _ansi = re.compile(ANSI_PATTERN)
        text = _ansi.sub("", text)
    if "\r" not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "\r" in line:
            states = [s for s in line.split("\r") if s]
            lines[i] = states[-1] if states else ""
    return "\n".join(lines)


class Cleaner:
    """collapse() across chunks: a partial line holding a `\\r` waits for the rest of its line
    (or the end of the call), so a progress bar split between two reads is not shown twice."""

    def __init__(self, sink, on: bool) -> None:
        self.sink, self.on = sink, on
        self._held: dict[str, str] = {}

    def write(self, stream: str, text: str) -> int:
        if not self.on or stream == "info":
            return self.sink.write(stream, text)
        text = self._held.pop(stream, "") + text
        nl = text.rfind("\n")
        rest = text[nl + 1:]
        if "\r" in rest:
            self._held[stream], text = rest, text[:nl + 1]
        return self.sink.write(stream, collapse(text)) if text else 0

    def flush(self) -> None:
        for stream, text in self._held.items():
            self.sink.write(stream, collapse(text))
        self._held.clear()


class Polled:
    """A plain class, not a dataclass: `import dataclasses` costs the client's every call ~5 ms."""

    __slots__ = ("start", "end", "skipped", "cuts", "dropped")

    def __init__(self, start: int = 0, end: int = 0, skipped: int = 0, cuts: dict | None = None,
                 dropped: int = 0) -> None:
        self.start = start  # the session's cursor before the poll
        self.end = end  # and after it
        self.skipped = skipped
        self.cuts = cuts if cuts is not None else {}
        self.dropped = dropped


def poll(client, ref: dict, out: Cleaner, budget: int, rest) -> Polled:
    """One runner call: what is unread, cut to budget, then marked read. When something was
    cut, the one note saying so (with `rest(start, end)`, the command for it) comes first."""
    got = client.call("task.output", dict(ref, max_bytes=max(0, budget), tails=True, head_share=HEAD_SHARE,
                                          mark_read=True))
    cuts = got.get("cuts") or []
    total = sum(c["total"] for c in cuts)
    result = Polled(start=got["cursor"] - total, end=got["cursor"], dropped=got["dropped"],
                    skipped=sum(c["total"] - c["shown"] for c in cuts),
                    cuts={c["stream"]: {"total": c["total"], "shown": c["shown"]} for c in cuts})
    if result.skipped:
        out.sink.note(skip_note(result, rest(result.start, result.end, result.end - (got.get("start") or 0))))
    for chunk in got["chunks"]:
        out.write(chunk["stream"], chunk["text"])
    out.flush()
    return result


def skip_note(polled: Polled, rest: str) -> str:
    parts = ", ".join(f"{s} {c['total'] - c['shown']} of {c['total']}"
                      for s, c in polled.cuts.items() if c["shown"] < c["total"])
    return (f"{polled.skipped} of {polled.end - polled.start} new bytes skipped ({parts}; bytes "
            f"{polled.start}-{polled.end}), the newest lines follow; {rest}")


def read_range(client, ref: dict, out: Cleaner, start: int, stop: int | None) -> int:
    """Offsets start..stop (None: the end) through an explicit cursor: the session's stays put."""
    cursor = start
    while stop is None or cursor < stop:
        want = READ_BYTES if stop is None else min(READ_BYTES, stop - cursor)
        got = client.call("task.output", dict(ref, cursor=cursor, max_bytes=want))
        if got["dropped"]:
            out.sink.note(f"{size(got['dropped'])} before offset {cursor + got['dropped']} are no longer kept")
        for chunk in got["chunks"]:
            out.write(chunk["stream"], chunk["text"])
        if got["cursor"] <= cursor or not got["more"]:
            cursor = got["cursor"]
            break
        cursor = got["cursor"]
    out.flush()
    return cursor


def is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def grep(client, ref: dict, out: Cleaner, regex: str, start: int, stop: int | None, budget: int | None
         ) -> tuple[int, int, int]:
    """The lines of offsets start..stop (None: the end) matching `regex`, each as `OFFSET: line`, at
    most `budget` bytes of them (None: all); marks nothing read. -> (lines shown, lines matching,
    bytes dropped before start that could not be searched)."""
    import re

    from client.args import UsageError

    try:
        pattern = re.compile(regex)
    except re.error as exc:
        raise UsageError(f"--grep {regex!r} is not a regular expression: {exc}") from None
    cursor, carry, carry_at = start, "", start
    shown = matched = dropped = spent = 0
    while stop is None or cursor < stop:
        want = READ_BYTES if stop is None else min(READ_BYTES, stop - cursor)
        got = client.call("task.output", dict(ref, cursor=cursor, max_bytes=want))
        text = "".join(c["text"] for c in got["chunks"])
        if got["dropped"] and not carry:
            dropped, carry_at = dropped + got["dropped"], cursor + got["dropped"]
        last = got["cursor"] <= cursor or not got["more"] or (stop is not None and got["cursor"] >= stop)
        lines = (carry + text).split("\n")
        carry = "" if last else lines.pop()
        for line in lines:
            at = carry_at
            carry_at += len(line.encode("utf-8", "replace")) + 1
            if line and pattern.search(line):
                matched += 1
                row = f"{at}: {collapse(line) if out.on else line}\n"
                if budget is None or spent + len(row) <= budget:
                    spent += out.sink.write("stdout", row)
                    shown += 1
        if last:
            break
        cursor = got["cursor"]
    return shown, matched, dropped
