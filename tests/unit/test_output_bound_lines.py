"""A bounded digest cuts at line ends where the kept bytes hold one, and a poll's smaller head
share spends most of the budget on the newest lines."""

from runner.core.tasks.bound import digest
from runner.core.tasks.output import OutputBuffer


def _buffer(lines: int) -> OutputBuffer:
    buf = OutputBuffer(1 << 20)
    for i in range(lines):
        buf.feed("stdout", f"line {i:05d} {'x' * 40}\n".encode())
    return buf


def test_cuts_fall_on_line_ends():
    got = digest(_buffer(1000), 0, 4000)
    texts = [t for s, t in got.pieces if s == "stdout"]
    assert len(texts) == 2
    for text in texts:
        assert text.endswith("\n")
        assert all(line.startswith("line ") and len(line) == 51 for line in text.splitlines())


def test_a_poll_is_tail_biased():
    head, tail = [t for s, t in digest(_buffer(1000), 0, 4000, head_share=0.25).pieces if s == "stdout"]
    assert len(tail) > 2 * len(head)
    assert tail.endswith("line 00999 " + "x" * 40 + "\n")
