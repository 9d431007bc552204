"""OutputBuffer: one task's stdout/stderr/info as a bounded UTF-8 byte ring with absolute offsets.

Readers never share state with the buffer: each keeps its own cursor (an
absolute byte offset), so any number of pollers can follow one task and a
poller that falls behind learns exactly how many bytes it missed.
"""

from __future__ import annotations

import codecs
from array import array
from bisect import bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from runner.system.spool import Spool

from plugkit.patterns import Pattern

STREAMS = ("stdout", "stderr", "info")
_CODES = {name: code for code, name in enumerate(STREAMS)}
_Decoder = codecs.getincrementaldecoder("utf-8")


@dataclass(frozen=True)
class ReadResult:
    chunks: list[tuple[str, str]]
    cursor: int
    dropped: int
    more: bool


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


class OutputBuffer:
    """Stored bytes are always valid UTF-8, so every offset handed out is a character boundary.

    Layout: one bytearray holding the retained window plus a segment table
    (absolute start + stream code) that grows only when the stream changes.
    Same-stream feeds just extend the bytearray, so a chatty process that
    writes a line at a time costs no per-write objects, and `find` can search
    across what used to be chunk and stream boundaries without joining anything.
    """

    def __init__(self, cap_bytes: int = 4 << 20, spool: Optional["Spool"] = None) -> None:
        if cap_bytes < 4:
            # Below one 4-byte character the ring could not hold a single whole character.
            raise ValueError("cap_bytes must be at least 4")
        self._cap = cap_bytes
        self._data = bytearray()
        self._start = 0
        self._end = 0
        self._seg_starts = array("q")
        self._seg_codes = bytearray()
        self._seg_head = 0
        # Alternating one-byte writes to stdout and stderr would otherwise make
        # the segment table (9 bytes per switch) outweigh the data it describes.
        self._max_segments = max(4096, cap_bytes // 16)
        self._decoders = [_Decoder(errors="replace") for _ in STREAMS]
        # (needle, cursor) -> offset scanned up to without a match. Waiters
        # re-ask the same question after every feed; stored bytes never
        # change, so only the new tail (plus a needle-length overlap) needs a look.
        self._misses: dict[tuple[bytes, int], int] = {}
        self._pending = [False] * len(STREAMS)
        # The crash copy on disk (runner.system.spool): fed the same bytes, in the same order.
        self.spool = spool

    @property
    def start(self) -> int:
        return self._start

    @property
    def end(self) -> int:
        return self._end

    @property
    def dropped(self) -> int:
        # Offsets begin at 0 and eviction only ever advances start.
        return self._start

    # -- across a runner's in-place restart (runner/boot/handover.py) -----------

    def dump(self) -> tuple[int, list[tuple[str, str]], dict[str, bytes]]:
        """(start, (stream, text) runs from start to the end, half characters held back per stream)."""
        chunks = [(stream, self.text(lo, hi)) for lo, hi, stream in self.spans(self._start)]
        pending = {STREAMS[c]: self._decoders[c].getstate()[0] for c in range(len(STREAMS)) if self._pending[c]}
        return self._start, chunks, pending

    @classmethod
    def restored(cls, cap_bytes: int, start: int, chunks: list[tuple[str, str]],
                 pending: dict[str, bytes], spool: Optional["Spool"] = None) -> "OutputBuffer":
        """A dump()'s buffer again, at the same absolute offsets (readers' cursors stay valid)."""
        buf = cls(cap_bytes)
        buf._start = buf._end = start
        for stream, text in chunks:
            buf._store(_code(stream), text.encode("utf-8", "replace"))
        for stream, held in pending.items():
            code = _code(stream)
            buf._decoders[code].decode(held)
            buf._pending[code] = bool(buf._decoders[code].getstate()[0])
        buf.spool = spool  # after the refill: the spool already holds those bytes
        return buf

    # -- writing -------------------------------------------------------------

    def feed(self, stream: str, data: bytes) -> None:
        code = _code(stream)
        if not data:
            return
        if type(data) is not bytes:
            data = bytes(data)
        if not self._pending[code] and data.isascii():
            # ASCII with no half character waiting is already valid UTF-8.
            self._store(code, data)
            return
        decoder = self._decoders[code]
        had_pending = self._pending[code]
        text = decoder.decode(data)
        self._pending[code] = bool(decoder.getstate()[0])
        if had_pending or self._pending[code] or "\ufffd" in text:
            self._store(code, text.encode("utf-8"))
        else:
            # The decoder accepted every byte as-is: skip the re-encode.
            self._store(code, data)

    def flush(self, stream: str) -> None:
        code = _code(stream)
        if self._pending[code]:
            text = self._decoders[code].decode(b"", final=True)
            self._pending[code] = False
            self._store(code, text.encode("utf-8"))

    def write_text(self, stream: str, text: str) -> None:
        # Through feed, so a half character already pending on the stream is
        # settled (as U+FFFD) before the note rather than glued onto it.
        self.feed(stream, text.encode("utf-8", errors="replace"))

    def _store(self, code: int, blob: bytes) -> None:
        size = len(blob)
        if not size:
            return
        if size >= self._cap:
            # The new piece alone fills the ring: drop everything older, then
            # the head of the piece itself.
            skip = size - self._cap
            while _is_continuation(blob[skip]):
                skip += 1
            self._evict_to(self._end)
            self._start = self._end = self._end + skip
            blob = blob[skip:]
        else:
            # Evict before appending so the bytearray never holds more than cap.
            self._evict_to(self._end + size - self._cap)
        if len(self._seg_codes) == self._seg_head or self._seg_codes[-1] != code:
            self._seg_starts.append(self._end)
            self._seg_codes.append(code)
        self._data += blob
        self._end += len(blob)
        if self.spool is not None:
            self.spool.write(blob)
        live = len(self._seg_codes) - self._seg_head
        if live > self._max_segments:
            self._evict_to(self._seg_starts[len(self._seg_starts) - self._max_segments])

    def _evict_to(self, target: int) -> None:
        """Advance start to the first character boundary at or after target."""
        if target <= self._start:
            return
        if target >= self._end:
            self._data.clear()
            del self._seg_starts[:]
            del self._seg_codes[:]
            self._seg_head = 0
            self._start = self._end
            return
        cut = target - self._start
        data = self._data
        while cut < len(data) and _is_continuation(data[cut]):
            cut += 1
        if cut == len(data):
            self._evict_to(self._end)
            return
        # CPython deletes from the front of a bytearray by moving its start
        # pointer, so this is not a memmove of the whole window.
        del data[:cut]
        self._start += cut
        head = bisect_right(self._seg_starts, self._start, self._seg_head) - 1
        self._seg_head = max(head, self._seg_head)
        if self._seg_head > 64 and self._seg_head * 2 > len(self._seg_codes):
            del self._seg_starts[: self._seg_head]
            del self._seg_codes[: self._seg_head]
            self._seg_head = 0

    # -- reading -------------------------------------------------------------

    def read(self, cursor: int, max_bytes: int) -> ReadResult:
        if cursor < 0 or max_bytes < 0:
            raise ValueError("cursor and max_bytes must not be negative")
        missed = max(0, self._start - cursor)
        pos = self._clamp(cursor)
        stop = min(self._end, pos + max_bytes)
        if max_bytes and stop < self._end:
            stop = self._boundary_at_or_before(stop)
            if stop == pos:
                # max_bytes is smaller than the next character: hand out that
                # one character anyway so the reader always moves forward.
                stop = self._boundary_after(pos)
        chunks: list[tuple[str, str]] = []
        if stop > pos:
            seg = bisect_right(self._seg_starts, pos, self._seg_head) - 1
            seg = max(seg, self._seg_head)
            at = pos
            while at < stop:
                nxt = seg + 1
                seg_end = self._seg_starts[nxt] if nxt < len(self._seg_starts) else self._end
                upto = min(seg_end, stop)
                piece = self._data[at - self._start : upto - self._start]
                chunks.append((STREAMS[self._seg_codes[seg]], piece.decode("utf-8", "replace")))
                at = upto
                seg = nxt
        return ReadResult(chunks=chunks, cursor=stop, dropped=missed, more=stop < self._end)

    def find(self, needle: str, cursor: int) -> int | None:
        """Absolute offset just past the first match at or after cursor, or None.

        UTF-8 is self-synchronising: a valid encoded needle can only match the
        valid stored bytes at character boundaries, so searching bytes is exact.
        """
        pos = min(max(cursor, self._start), self._end)
        encoded = needle.encode("utf-8")
        key = (encoded, cursor)
        scanned = self._misses.pop(key, None)
        if scanned is not None:
            pos = max(pos, scanned - len(encoded) + 1)
        found = self._data.find(encoded, pos - self._start)
        if found >= 0:
            return self._start + found + len(encoded)
        if len(self._misses) >= 16:
            del self._misses[next(iter(self._misses))]
        self._misses[key] = self._end
        return None

    def find_regex(self, pattern: Pattern, cursor: int) -> int | None:
        """Like find, for a compiled str pattern; `^` without MULTILINE anchors at the cursor."""
        pos = self._clamp(cursor)
        raw = self._data[pos - self._start :]
        text = raw.decode("utf-8", "replace")
        match = pattern.search(text)
        if match is None:
            return None
        stop = match.end()
        if len(text) != len(raw):
            stop = len(text[:stop].encode("utf-8"))
        return pos + stop

    def spans(self, cursor: int) -> list[tuple[int, int, str]]:
        """(start, end, stream) of each same-stream run from cursor to the end, in order."""
        pos = self._clamp(cursor)
        spans: list[tuple[int, int, str]] = []
        seg = max(bisect_right(self._seg_starts, pos, self._seg_head) - 1, self._seg_head)
        count = len(self._seg_starts)
        while seg < count:
            lo = max(self._seg_starts[seg], pos)
            hi = self._seg_starts[seg + 1] if seg + 1 < count else self._end
            if hi > lo:
                spans.append((lo, hi, STREAMS[self._seg_codes[seg]]))
            seg += 1
        return spans

    def text(self, lo: int, hi: int) -> str:
        """The stored text between two absolute offsets, both moved inward to character boundaries."""
        lo, hi = self._clamp(lo), min(max(hi, self._start), self._end)
        if hi < self._end:
            hi = self._boundary_at_or_before(hi)
        return self._data[lo - self._start : hi - self._start].decode("utf-8", "replace") if hi > lo else ""

    def tail_text(self, max_bytes: int) -> str:
        if max_bytes <= 0:
            return ""
        cut = max(0, len(self._data) - max_bytes)
        while cut < len(self._data) and _is_continuation(self._data[cut]):
            cut += 1
        return self._data[cut:].decode("utf-8", "replace")

    def _clamp(self, cursor: int) -> int:
        """Into the window, and forward to a character boundary should a caller invent a cursor."""
        index = min(max(cursor - self._start, 0), len(self._data))
        while index < len(self._data) and _is_continuation(self._data[index]):
            index += 1
        return self._start + index

    def _boundary_at_or_before(self, offset: int) -> int:
        index = offset - self._start
        while index > 0 and _is_continuation(self._data[index]):
            index -= 1
        return self._start + index

    def _boundary_after(self, offset: int) -> int:
        index = offset - self._start + 1
        while index < len(self._data) and _is_continuation(self._data[index]):
            index += 1
        return self._start + index


def _code(stream: str) -> int:
    try:
        return _CODES[stream]
    except KeyError:
        raise ValueError(f"unknown stream {stream!r}; expected one of {', '.join(STREAMS)}") from None
