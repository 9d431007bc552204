"""bound.digest: each stream keeps its share of the budget and its last bytes, in write order."""

from runner.core.tasks.bound import digest, shares
from runner.core.tasks.output import OutputBuffer


def test_a_small_stream_leaves_its_unused_share_to_the_flood():
    assert shares({"stdout": 8, "stderr": 10_000}, 100) == {"stdout": 8, "stderr": 92}
    assert shares({"stdout": 500, "stderr": 500, "info": 10}, 100) == {"info": 10, "stdout": 45, "stderr": 45}


def test_the_final_line_of_a_quiet_stream_survives_a_flood_on_the_other():
    buf = OutputBuffer()
    buf.feed("stdout", b"start\n")
    buf.feed("stderr", b"e" * 100_000)
    buf.feed("stdout", b"done-ok\n")
    got = digest(buf, 4, 1000)
    text = {s: "".join(t for st, t in got.pieces if st == s) for s in ("stdout", "stderr")}
    assert text["stdout"] == "t\ndone-ok\n"
    # stderr never appeared before the cursor: its head is kept as well as its tail.
    assert got.pieces[0] == ("stdout", "t\n") and got.pieces[-1] == ("stdout", "done-ok\n")
    assert "bytes of stderr cut here" in "".join(t for s, t in got.pieces if s == "info")
    cuts = {c.stream: (c.total, c.shown) for c in got.cuts}
    assert cuts["stdout"] == (10, 10) and cuts["stderr"][0] == 100_000
    assert sum(len(t.encode()) for s, t in got.pieces if s != "info") <= 1000


def test_cut_points_never_split_a_character():
    buf = OutputBuffer()
    buf.feed("stdout", "é".encode() * 5000)
    buf.feed("stderr", "ü".encode() * 5000)
    got = digest(buf, 0, 301)
    assert all("\ufffd" not in t for _, t in got.pieces)
    assert got.pieces[-1][1].endswith("ü")
