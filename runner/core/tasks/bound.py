"""Head and tail of each stream: what a bounded answer keeps of output too big to show whole.

An interleaved tail loses a stream that went quiet before the other flooded (one
stdout line, then 1 MB of stderr, and the stdout line that mattered is gone). Here
every stream in the range gets its share of the budget, and each keeps its last
bytes; a stream whose first bytes lie in the range (its head was never shown)
keeps its head too. Pieces come back in the order they were written.

A cut lands on a line boundary when one lies within the kept bytes, so nobody reads
half a line; a poll asks for a smaller head share, since what is newest matters most.
"""

from dataclasses import dataclass

from runner.core.tasks.output import OutputBuffer


@dataclass(frozen=True)
class StreamCut:
    stream: str
    total: int  # bytes of this stream in the range
    shown: int  # bytes of it kept


@dataclass(frozen=True)
class Digest:
    pieces: list[tuple[str, str]]  # (stream, text), in offset order
    cuts: list[StreamCut]  # one per stream present, in STREAMS order
    end: int


def shares(totals: dict[str, int], budget: int) -> dict[str, int]:
    """Equal shares, except that a stream needing less than its share leaves the rest to the others."""
    left, kept = budget, {}
    order = sorted(totals, key=lambda s: totals[s])
    for i, name in enumerate(order):
        kept[name] = min(totals[name], left // (len(order) - i))
        left -= kept[name]
    return kept


def digest(buffer: OutputBuffer, cursor: int, budget: int, head_share: float = 0.5) -> Digest:
    spans = buffer.spans(cursor)
    totals: dict[str, int] = {}
    for lo, hi, stream in spans:
        totals[stream] = totals.get(stream, 0) + hi - lo
    start = spans[0][0] if spans else buffer.end
    seen = {stream for lo, _, stream in buffer.spans(buffer.start) if lo < start}
    kept = shares(totals, budget)
    ranges: list[tuple[int, int, str]] = []
    for stream, total in totals.items():
        mine = [(lo, hi) for lo, hi, s in spans if s == stream]
        if kept[stream] >= total:
            ranges += [(lo, hi, stream) for lo, hi in mine]
            continue
        head = 0 if stream in seen else int(kept[stream] * head_share)
        ranges += [(lo, hi, stream) for lo, hi in _whole_lines(buffer, _first(mine, head), mine, end=True)]
        ranges += [(lo, hi, stream) for lo, hi in _whole_lines(buffer, _last(mine, kept[stream] - head), mine,
                                                               end=False)]
    ranges.sort()
    pieces: list[tuple[str, str]] = []
    last_end: dict[str, int] = {}
    for lo, hi, stream in ranges:
        gap = _bytes_between(spans, stream, last_end.get(stream), lo)
        if gap:
            pieces.append(("info", f"\n[... {gap} bytes of {stream} cut here ...]\n"))
        text = buffer.text(lo, hi)
        if pieces and pieces[-1][0] == stream and not gap:
            pieces[-1] = (stream, pieces[-1][1] + text)
        elif text:
            pieces.append((stream, text))
        last_end[stream] = hi
    cuts = [StreamCut(s, totals[s], kept[s]) for s in ("stdout", "stderr", "info") if s in totals]
    return Digest(pieces, cuts, buffer.end)


def _first(spans: list[tuple[int, int]], budget: int) -> list[tuple[int, int]]:
    out = []
    for lo, hi in spans:
        if budget <= 0:
            break
        take = min(hi - lo, budget)
        out.append((lo, lo + take))
        budget -= take
    return out


def _last(spans: list[tuple[int, int]], budget: int) -> list[tuple[int, int]]:
    out = []
    for lo, hi in reversed(spans):
        if budget <= 0:
            break
        take = min(hi - lo, budget)
        out.append((hi - take, hi))
        budget -= take
    return out[::-1]


def _whole_lines(buffer: OutputBuffer, ranges: list[tuple[int, int]], spans: list[tuple[int, int]],
                 end: bool) -> list[tuple[int, int]]:
    """Pull the cut edge of a head (end=True) or tail back to a newline inside the range, if
    there is one: a range that stops where its span stops is whole already and stays as is."""
    if not ranges:
        return ranges
    ends = {hi for _, hi in spans} if end else {lo for lo, _ in spans}
    i = len(ranges) - 1 if end else 0
    lo, hi = ranges[i]
    if (hi if end else lo) in ends:
        return ranges
    raw = buffer.text(lo, hi).encode("utf-8")
    if end:
        cut = raw.rfind(b"\n")
        if cut >= 0:
            ranges[i] = (lo, lo + cut + 1)
    else:
        cut = raw.find(b"\n")
        if 0 <= cut < len(raw) - 1:
            ranges[i] = (lo + cut + 1, hi)
    return ranges


def _bytes_between(spans: list[tuple[int, int, str]], stream: str, after: int | None, before: int) -> int:
    """Bytes of `stream` left out between two kept ranges of it (0 for the first range)."""
    if after is None or after >= before:
        return 0
    return sum(min(hi, before) - max(lo, after) for lo, hi, s in spans
               if s == stream and hi > after and lo < before)
