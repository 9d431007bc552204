"""Following a task's output for one call, bounded.

Output shown per call is capped (PLUGKIT_MAX_OUTPUT bytes, default 64 KiB; 0 or
--full means no cap): the first half streams as it arrives, the rest is skipped
while the task runs, and once it ends the last half is shown after a note naming
exactly how many bytes were left out and the bounded next steps: every stream keeps its
own last lines, and the head ends on a line end (no answer shows half a line). The
skipped bytes stay in the runner (`exec:status task_N --from A --to B`, `--grep RE`).
"""

import os
import sys
import time

from client.show.poll import Cleaner, env_cap, wants_clean
from client.show.render import finished, size, waiting

DEFAULT_LIMIT = 64 << 10
READ_BYTES = 256 << 10
ANY_TEXT = r"[\s\S]"  # task.wait's until_regex for "as soon as anything unread exists"
# Waits are sliced into short runner calls. A Ctrl-C that lands between
# CPython's last signal check and the poll() inside socket.recv is only acted on
# once recv returns (a lost wake-up, seen in ~5% of tries here), so a long wait
# could ignore Ctrl-C for its whole length; one second bounds that.
MAX_SLICE_S = 1.0
# While output is being skipped nothing is written, so a reader that left
# (`| head -1`) would go unnoticed; this is how often we look for it instead.
READER_CHECK_S = 0.25


def output_limit(full: bool, cap: int | None = None) -> int | None:
    """None means no cap. `cap` is a caller's own (the hooks'), else $PLUGKIT_MAX_OUTPUT's."""
    if full:
        return None
    return cap if cap is not None else env_cap(DEFAULT_LIMIT)


class Printer:
    """Task stdout to our stdout, everything else (stderr, runner notes, ours) to our stderr."""

    def __init__(self) -> None:
        self.out = sys.stdout.buffer
        self.err = sys.stderr.buffer
        # A terminal renders colours and `\r` progress; anything else gets them cleaned out.
        try:
            self.raw = sys.stdout.isatty()
        except (AttributeError, ValueError):
            self.raw = False
        self._mid_line = False
        try:
            import stat

            self._fifo = stat.S_ISFIFO(os.fstat(1).st_mode)
        except OSError:
            self._fifo = False

    def write(self, stream: str, text: str) -> int:
        data = text.encode("utf-8", "replace")
        target = self.out if stream == "stdout" else self.err
        target.write(data)
        # Flushed per chunk so stdout and stderr interleave as the task wrote them.
        target.flush()
        if data:
            self._mid_line = not data.endswith(b"\n")
        return len(data)

    def note(self, text: str) -> None:
        sys.stdout.flush()
        # On a terminal our note would otherwise be glued to the task's unfinished line.
        lead = "\n" if self._mid_line else ""
        self._mid_line = False
        self.err.write(f"{lead}[plugkit] {text}\n".encode("utf-8", "replace"))
        self.err.flush()

    def check_reader(self) -> None:
        """Raise BrokenPipeError if our stdout is a pipe whose reader has gone."""
        if not self._fifo:
            return
        import select

        poller = select.poll()
        poller.register(1, select.POLLOUT)
        for _, events in poller.poll(0):
            if events & select.POLLERR:
                raise BrokenPipeError(32, "stdout reader closed")


class Collector:
    """For --json: keeps chunks (adjacent same-stream ones merged) and notes."""

    def __init__(self) -> None:
        self.chunks: list[dict] = []
        self.notes: list[str] = []

    def write(self, stream: str, text: str) -> int:
        if self.chunks and self.chunks[-1]["stream"] == stream:
            self.chunks[-1]["text"] += text
        else:
            self.chunks.append({"stream": stream, "text": text})
        return len(text.encode("utf-8", "replace"))

    def note(self, text: str) -> None:
        self.notes.append(text)

    def check_reader(self) -> None:
        pass


class Follower:
    """Reads one task's unread output through the session's cursor in the runner and shows it."""

    def __init__(self, client, ref: dict, sink, limit: int | None, until: str | None = None) -> None:
        self.client, self.ref, self.sink = client, ref, sink
        self.head_left = None if limit is None else limit - limit // 2
        self.tail = None if limit is None else limit // 2
        self.until = until
        self.cursor = 0  # the session's read cursor after our last read
        self.more = True  # unread output may exist; reset by every read
        self.matched = False
        self.match_at: int | None = None  # the offset just past the match, when the runner found it
        # (start, end, whole) -> the bounded next steps a cut note offers (render.next_steps)
        self.next_steps = None
        self.omitted = 0
        self.cuts: dict[str, dict[str, int]] = {}  # per stream, when the end was cut to fit
        self.dropped = 0
        self._carry = ""
        self.out = Cleaner(sink, wants_clean(sink, limit is None))

    @property
    def skipping(self) -> bool:
        return self.head_left is not None and self.head_left <= 0

    def read_size(self) -> int:
        return READ_BYTES if self.head_left is None else max(1, min(READ_BYTES, self.head_left))

    def take(self, out: dict) -> None:
        if out.get("dropped"):
            self.dropped += out["dropped"]
            self.sink.note(f"{size(out['dropped'])} of output were dropped before they could be read "
                           "(the runner keeps only the newest part of a task's output)")
        shown = 0
        chunks, held = out["chunks"], 0
        if self.head_left is not None and _size(chunks) >= self.head_left:
            # The read that ends the head: what follows its last line end waits for the tail, so
            # no answer (a hook's above all) shows half a line and then a cut note.
            chunks, held = _whole_lines(chunks)
        for chunk in chunks:
            shown += self.out.write(chunk["stream"], chunk["text"])
            if self.until and not self.matched:
                window = self._carry + chunk["text"]
                self.matched = self.until in window
                self._carry = window[-len(self.until):]
        self.cursor, self.more = out["cursor"] - held, out["more"]
        if self.head_left is not None:
            self.head_left -= shown + held

    def read(self) -> None:
        self.take(self.client.call("task.output", dict(self.ref, max_bytes=self.read_size())))

    def drain(self) -> None:
        while self.more and not self.skipping:
            self.read()
        self.out.flush()

    def follow(self, info: dict | None, deadline: float) -> dict | None:
        """Show output until the task ends, `until` is seen, it waits for input, or the deadline passes.
        Returns the newest TaskInfo seen (None only if no runner call was needed)."""
        try:
            return self._follow(info, deadline)
        finally:
            self.out.flush()

    def _follow(self, info: dict | None, deadline: float) -> dict | None:
        while True:
            if self.more and not self.skipping:
                # A task that never stops printing (with --full) must still be left
                # at the deadline; a finished one is drained whatever the time.
                if info is not None and not finished(info) and time.monotonic() >= deadline:
                    return info
                self.read()
                continue
            if self.matched or finished(info) or waiting(info):
                return info
            remaining = deadline - time.monotonic()
            if remaining <= 0 and info is not None:
                return info
            wait_s = max(0.0, min(remaining, MAX_SLICE_S))
            params = dict(self.ref)
            if self.skipping:
                self.sink.check_reader()
                wait_s = min(wait_s, READER_CHECK_S)
                if self.until:
                    # Start far enough back to catch the text straddling what was shown.
                    params.update(until_text=self.until,
                                  cursor=max(0, self.cursor - len(self.until.encode()) + 1))
            else:
                params["until_regex"] = ANY_TEXT
            params["timeout_ms"] = int(wait_s * 1000)
            result = self.client.call("task.wait", params, timeout=wait_s + 30)
            info = result["task"]
            if waiting(info):
                self.more = True  # what it printed before blocking (a prompt) is shown first
            if self.skipping:
                if self.until and result["matched"] and not self.matched:
                    self.matched, self.match_at = True, result.get("match_cursor")
            elif result["matched"]:
                self.more = True

    def finish(self, end: int) -> None:
        """After skipping: show the end of the output up to offset `end`. When more is left
        than the tail holds, the runner shares the tail among the streams so each keeps
        its last lines (one line of stdout is never lost behind a flood of stderr)."""
        if not self.skipping or self.tail is None:
            return
        if end - self.cursor <= self.tail:
            self._read_to(end)
            return
        out = self.client.call("task.output", dict(self.ref, cursor=self.cursor, max_bytes=self.tail, tails=True))
        cuts = out.get("cuts") or []
        self.cuts = {c["stream"]: {"total": c["total"], "shown": c["shown"]} for c in cuts}
        left_out = sum(c["total"] - c["shown"] for c in cuts)
        self.omitted += left_out
        parts = [f"{c['stream']} {c['total'] - c['shown']} of {c['total']} not shown" if c["shown"] < c["total"]
                 else f"{c['stream']} shown whole" for c in cuts]
        kept = end - (out.get("start") or 0)  # what the runner's ring still holds: all --full can print
        nxt = f"; {self.next_steps(self.cursor, end, kept)}" if self.next_steps else ""
        self.sink.note(f"output cut to fit: {end} bytes in all, the first {self.cursor} shown, then "
                       f"{', '.join(parts)}; the last lines follow{nxt}")
        for chunk in out["chunks"]:
            self.out.write(chunk["stream"], chunk["text"])
        self.out.flush()

    def _read_to(self, end: int) -> None:
        # Nothing is left out (it fits the tail): from our cursor, which may lie before the
        # session's (a head held back its last partial line), marked read so the next
        # exec:status does not repeat it.
        out = self.client.call("task.output", dict(self.ref, cursor=self.cursor, max_bytes=end - self.cursor,
                                                   tails=True, mark_read=True))
        for chunk in out["chunks"]:
            self.out.write(chunk["stream"], chunk["text"])
        self.cursor = out["cursor"]
        self.out.flush()


def _size(chunks: list[dict]) -> int:
    return sum(len(c["text"].encode("utf-8", "replace")) for c in chunks)


def _whole_lines(chunks: list[dict]) -> tuple[list[dict], int]:
    """(the chunks up to their last newline, the bytes after it held back)."""
    for i in range(len(chunks) - 1, -1, -1):
        text = chunks[i]["text"]
        cut = text.rfind("\n")
        if cut >= 0:
            kept = chunks[:i] + [dict(chunks[i], text=text[:cut + 1])]
            return kept, _size(chunks) - _size(kept)
    return [], _size(chunks)
