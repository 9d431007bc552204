"""parse_head on hostile bytes: every input is a request head or a BadRequest with the answer
to send, never another exception (which would drop the connection without a word)."""

import random

import pytest

from runner.http.wire import BadRequest, Head, parse_head

GOOD = (b"POST /rpc?x=1 HTTP/1.1\r\nHost: 127.0.0.1:32882\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer t\r\nContent-Length: 12\r\nConnection: keep-alive")
NASTY = [b"\r", b"\n", b":", b" ", b"\t", b"\x00", b"\xff", b"\xc3\xa9", b"/", b"?", b"-1", b"99999999999999999999",
         b"Transfer-Encoding", b"Content-Length", b"Host", b"HTTP/1.0", b"\r\n "]


def test_a_well_formed_head_parses_to_what_it_says():
    head = parse_head(GOOD, max_body=100)
    assert (head.method, head.path, head.length, head.keep_alive) == ("POST", "/rpc", 12, True)
    assert head.headers["host"] == "127.0.0.1:32882" and head.headers["authorization"] == "Bearer t"


def test_ten_thousand_mangled_heads_parse_or_are_refused_with_an_answer():
    rng = random.Random(31)
    for _ in range(10_000):
        raw = bytearray(GOOD)
        for _ in range(rng.randint(1, 6)):
            at = rng.randrange(len(raw) + 1)
            op = rng.random()
            if op < 0.4:
                raw[at:at] = rng.choice(NASTY)
            elif op < 0.7 and raw:
                del raw[at:at + rng.randint(1, 8)]
            elif raw:
                raw[min(at, len(raw) - 1)] = rng.randrange(256)
        try:
            got = parse_head(bytes(raw), max_body=100)
        except BadRequest as bad:
            assert bad.response.status in (400, 413, 501, 505) and bad.response.close
        else:
            assert isinstance(got, Head) and 0 <= got.length <= 100


@pytest.mark.parametrize("raw", [b"", b" ", b"GET", b"GET / HTTP/1.1\r\n", b"\x00" * 50])
def test_degenerate_heads_are_bad_requests(raw):
    with pytest.raises(BadRequest):
        parse_head(raw, max_body=100)
