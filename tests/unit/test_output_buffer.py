"""OutputBuffer: offsets, eviction, UTF-8 safety and search, without any process or event loop."""

import codecs
import random
import tracemalloc
from itertools import groupby

import pytest

from plugkit.patterns import compile_client_pattern
from runner.core.tasks.output import OutputBuffer, ReadResult

STREAMS = ("stdout", "stderr", "info")


def read_all(buf: OutputBuffer, cursor: int = 0) -> ReadResult:
    return buf.read(cursor, 1 << 30)


def text_of(result: ReadResult) -> str:
    return "".join(text for _, text in result.chunks)


def test_reads_follow_absolute_offsets_across_polls():
    buf = OutputBuffer()
    buf.feed("stdout", b"hello ")
    first = buf.read(0, 100)
    assert first == ReadResult(chunks=[("stdout", "hello ")], cursor=6, dropped=0, more=False)
    buf.feed("stdout", b"world")
    second = buf.read(first.cursor, 100)
    assert second.chunks == [("stdout", "world")]
    assert second.cursor == buf.end == 11
    assert buf.read(second.cursor, 100) == ReadResult([], 11, 0, False)
    assert buf.read(1000, 100) == ReadResult([], 11, 0, False)  # past the end: clamped


def test_streams_stay_tagged_and_same_stream_pieces_merge():
    buf = OutputBuffer()
    buf.feed("stdout", b"a")
    buf.feed("stdout", b"b")
    buf.feed("stderr", b"E")
    buf.write_text("info", "killed after timeout")
    buf.feed("stdout", b"c")
    assert read_all(buf).chunks == [
        ("stdout", "ab"),
        ("stderr", "E"),
        ("info", "killed after timeout"),
        ("stdout", "c"),
    ]


def test_independent_readers_do_not_disturb_each_other():
    buf = OutputBuffer()
    buf.feed("stdout", b"0123456789")
    slow = buf.read(0, 3)
    fast = buf.read(0, 100)
    assert text_of(slow) == "012" and slow.more
    assert text_of(fast) == "0123456789" and not fast.more
    buf.feed("stderr", b"abc")
    assert text_of(buf.read(slow.cursor, 100)) == "3456789abc"
    assert buf.read(fast.cursor, 100).chunks == [("stderr", "abc")]
    # Re-reading an old cursor is idempotent: reads never consume.
    assert text_of(buf.read(slow.cursor, 100)) == "3456789abc"


def test_eviction_counts_dropped_bytes_and_keeps_the_newest():
    buf = OutputBuffer(cap_bytes=10)
    for piece in (b"aaaa", b"bbbb", b"cccc"):
        buf.feed("stdout", piece)
    assert (buf.start, buf.end, buf.dropped) == (2, 12, 2)
    assert text_of(read_all(buf, buf.start)) == "aabbbbcccc"
    buf.feed("stderr", b"dddddddddddddddd")  # larger than the whole ring
    assert buf.end == 28
    assert buf.dropped == 18
    assert read_all(buf, buf.start).chunks == [("stderr", "dddddddddd")]


def test_cursor_below_start_reports_what_it_missed():
    buf = OutputBuffer(cap_bytes=8)
    buf.feed("stdout", b"0123456789ABCDEF")
    result = buf.read(3, 100)
    assert result.dropped == buf.start - 3 == 5
    assert text_of(result) == "89ABCDEF"
    assert buf.read(buf.start, 100).dropped == 0


def test_dropped_is_reported_even_when_max_bytes_is_zero():
    buf = OutputBuffer(cap_bytes=8)
    buf.feed("stdout", b"0123456789")
    result = buf.read(0, 0)
    assert result == ReadResult(chunks=[], cursor=buf.start, dropped=2, more=True)
    at_end = buf.read(buf.end, 0)
    assert at_end == ReadResult(chunks=[], cursor=buf.end, dropped=0, more=False)


def test_a_cursor_inside_a_character_moves_to_the_next_boundary():
    buf = OutputBuffer()
    buf.feed("stdout", "€uro".encode())
    assert buf.read(1, 10) == ReadResult([("stdout", "uro")], 6, 0, False)
    assert buf.find_regex(compile_client_pattern("u"), 2) == 4




def test_rejects_negative_cursors_and_unknown_streams():
    buf = OutputBuffer()
    with pytest.raises(ValueError):
        buf.read(-1, 10)
    with pytest.raises(ValueError, match="stdout"):
        buf.feed("stdin", b"x")


@pytest.mark.parametrize("char", ["é", "€", "😀"], ids=["2-byte", "3-byte", "4-byte"])
def test_max_bytes_never_splits_a_character(char):
    width = len(char.encode())
    buf = OutputBuffer()
    buf.feed("stdout", ("a" + char * 4).encode())
    for max_bytes in range(1, 1 + 4 * width):
        cursor, pieces = 0, []
        while cursor < buf.end:
            result = buf.read(cursor, max_bytes)
            assert result.cursor > cursor, "a reader must always advance"
            pieces.append(text_of(result))
            cursor = result.cursor
        assert "".join(pieces) == "a" + char * 4
    # Smaller than one character: that whole character, so the reader advances.
    result = buf.read(1, 1)
    assert text_of(result) == char and result.cursor == 1 + width and result.more


@pytest.mark.parametrize("stream", STREAMS)
def test_character_split_across_feeds_is_reassembled_per_stream(stream):
    others = [s for s in STREAMS if s != stream]
    encoded = "😀".encode()
    buf = OutputBuffer()
    buf.feed(stream, b"x" + encoded[:1])
    # Other streams writing in between must not disturb this stream's decoder.
    buf.feed(others[0], "é".encode()[:1])
    buf.feed(stream, encoded[1:3])
    buf.feed(others[1], b"plain")
    buf.feed(stream, encoded[3:] + b"y")
    buf.feed(others[0], "é".encode()[1:])
    texts = {}
    for name, text in read_all(buf).chunks:
        texts[name] = texts.get(name, "") + text
    assert texts[stream] == "x😀y"
    assert texts[others[0]] == "é"
    assert texts[others[1]] == "plain"
    assert buf.end == len("x😀y".encode()) + len("é".encode()) + len(b"plain")
    for byte in "a€😀b".encode():
        buf.feed(stream, bytes([byte]))
    assert read_all(buf, buf.end - len("a€😀b".encode())).chunks == [(stream, "a€😀b")]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"ok\xffok", "ok\ufffdok"),
        (b"\xc3\x28", "\ufffd("),  # a lead byte followed by a non-continuation
        (b"\xed\xa0\x80", "\ufffd\ufffd\ufffd"),  # an encoded surrogate is not UTF-8
        (b"\x80\x80", "\ufffd\ufffd"),  # stray continuations
    ],
)
def test_invalid_utf8_becomes_replacement_characters(raw, expected):
    buf = OutputBuffer()
    buf.feed("stderr", raw)
    result = read_all(buf)
    assert text_of(result) == expected
    # Offsets count the stored text, so they match what readers are given.
    assert buf.end == len(expected.encode())


def test_flush_turns_a_dangling_partial_sequence_into_one_replacement():
    buf = OutputBuffer()
    buf.feed("stdout", b"end" + "€".encode()[:2])
    assert text_of(read_all(buf)) == "end"
    buf.flush("stdout")
    assert text_of(read_all(buf)) == "end\ufffd"
    buf.flush("stdout")  # nothing pending: no-op
    buf.feed("stdout", b"more")
    assert text_of(read_all(buf)) == "end\ufffdmore"
    # A note written after a half character must not be glued onto it.
    buf.feed("info", "€".encode()[:1])
    buf.write_text("info", "killed")
    assert read_all(buf).chunks[-1] == ("info", "\ufffdkilled")


def test_eviction_trims_at_a_character_boundary():
    buf = OutputBuffer(cap_bytes=5)
    buf.feed("stdout", "😀😀".encode())  # 8 bytes: only one whole emoji fits
    assert buf.start == 4 and buf.end == 8
    assert text_of(read_all(buf, 0)) == "😀"
    buf.feed("stdout", "é".encode())  # 6 bytes would not fit: the emoji goes whole
    result = read_all(buf, 0)
    assert text_of(result) == "é"
    assert result.dropped == buf.start == 8
    buf.feed("stdout", b"ab")
    assert text_of(read_all(buf, 0)) == "éab"


def test_find_matches_across_chunks_and_streams():
    buf = OutputBuffer()
    buf.feed("stdout", b"server listen")
    buf.feed("stdout", b"ing on :80")
    assert buf.find("listening", 0) == len(b"server listening")
    buf.feed("stderr", b"rea")
    buf.feed("stdout", b"dy\n")
    assert buf.find("ready", 0) == buf.end - 1
    assert buf.find("ready", buf.end - 3) is None  # the match starts before the cursor
    assert buf.find("absent", 0) is None


def test_a_waiter_asking_after_every_feed_sees_a_match_split_across_feeds():
    buf = OutputBuffer(cap_bytes=16)
    for piece in (b"xxxxxxxxxxx", b"ser", b"ver re", b"a", b"dy"):
        assert buf.find("server ready", 2) is None
        buf.feed("stdout", piece)
    assert buf.find("server ready", 2) == buf.end
    assert buf.find("server ready", buf.end) is None


def test_find_reports_byte_offsets_for_non_ascii_text():
    buf = OutputBuffer()
    buf.feed("stdout", "ünïcode → dönë".encode())
    end = buf.find("→", 0)
    assert end == len("ünïcode →".encode())
    assert text_of(buf.read(end, 100)) == " dönë"


def test_find_searches_only_from_the_cursor_and_the_retained_window():
    buf = OutputBuffer(cap_bytes=8)
    buf.feed("stdout", b"MARK....MARK")
    assert buf.start == 4
    assert buf.find("MARK", 0) == 12
    assert buf.find("MARK", 13) is None


def test_find_regex_spans_chunks_and_returns_byte_offsets():
    buf = OutputBuffer()
    buf.feed("stdout", "ß build ".encode())
    buf.feed("stderr", b"fin")
    buf.feed("stdout", b"ished in 12")
    buf.feed("stdout", b"ms\n")
    pattern = compile_client_pattern(r"finished in (\d+)ms")
    end = buf.find_regex(pattern, 0)
    assert end == len("ß build finished in 12ms".encode())
    assert buf.find_regex(pattern, end) is None
    assert buf.find_regex(compile_client_pattern("nope"), 0) is None


def test_tail_text_joins_streams_and_cuts_at_a_boundary():
    buf = OutputBuffer()
    buf.feed("stdout", b"out ")
    buf.feed("stderr", "ërr".encode())
    assert buf.tail_text(1000) == "out ërr"
    assert buf.tail_text(3) == "rr"  # 4 bytes would start inside "ë"
    assert buf.tail_text(4) == "ërr"
    assert buf.tail_text(0) == ""


def test_many_stream_switches_stay_bounded():
    buf = OutputBuffer(cap_bytes=1 << 16)
    for i in range(200_000):
        buf.feed(STREAMS[i % 2], b"x")
    result = read_all(buf, 0)
    assert result.dropped == buf.start > 0
    assert sum(len(text) for _, text in result.chunks) == buf.end - buf.start
    assert len(result.chunks) <= 4096


def test_memory_stays_bounded_when_fed_far_more_than_the_cap():
    cap = 1 << 20
    piece = bytes(range(32, 127)) * 700  # ~65 KiB of ASCII
    tracemalloc.start()
    try:
        buf = OutputBuffer(cap_bytes=cap)
        fed = 0
        while fed < 50 << 20:
            buf.feed("stdout" if fed % 3 else "stderr", piece)
            fed += len(piece)
        current, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert buf.end == fed
    assert buf.end - buf.start <= cap
    assert buf.dropped == fed - (buf.end - buf.start)
    assert current < cap + 4 * len(piece) + (256 << 10)


def _reference(feeds: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """What each feed should store: a plain per-stream incremental decode, re-encoded."""
    decoders = {s: codecs.getincrementaldecoder("utf-8")(errors="replace") for s in STREAMS}
    return [(s, decoders[s].decode(raw).encode()) for s, raw in feeds]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("cap", [7, 64, 1 << 20])
def test_random_feeds_agree_with_a_plain_decoder(seed, cap):
    rng = random.Random(seed)
    alphabet = "aZ \n€é😀".encode() + b"\xff\x80"
    feeds = []
    for _ in range(rng.randrange(1, 60)):
        size = rng.randrange(0, 12)
        feeds.append((rng.choice(STREAMS), bytes(rng.choice(alphabet) for _ in range(size))))
    buf = OutputBuffer(cap_bytes=cap)
    cursor, seen = 0, b""
    for stream, raw in feeds:
        buf.feed(stream, raw)
        if rng.random() < 0.5:
            result = buf.read(cursor, rng.randrange(0, 9))
            assert result.dropped == max(0, buf.start - cursor)
            seen += b"".join(text.encode() for _, text in result.chunks)
            cursor = result.cursor
    stored = b"".join(blob for _, blob in _reference(feeds))
    assert buf.end == len(stored)
    assert buf.end - buf.start <= cap
    window = read_all(buf, 0)
    flat = b"".join(text.encode() for _, text in window.chunks)
    assert stored.endswith(flat) and len(flat) == buf.end - buf.start
    for (a, _), (b, _) in zip(window.chunks, window.chunks[1:]):
        assert a != b, "adjacent same-stream pieces must be merged"
    if cap == 1 << 20:
        assert seen == stored[: len(seen)]
        stored_pieces = [(stream, blob) for stream, blob in _reference(feeds) if blob]
        merged = [
            (stream, b"".join(blob for _, blob in group).decode())
            for stream, group in groupby(stored_pieces, key=lambda piece: piece[0])
        ]
        assert window.chunks == merged
