"""runner.system.spool: bounded on disk whatever a task prints, and read back exactly."""

import os

from runner.core.tasks.output import OutputBuffer
from runner.system import spool


def files(directory) -> dict[str, int]:
    return {name: os.path.getsize(os.path.join(directory, name)) for name in os.listdir(directory)}


def test_only_the_newest_two_halves_are_kept_and_read_back(tmp_path):
    sp = spool.Spool(str(tmp_path), 7, half=100)
    data = b"".join(b"%05d\n" % i for i in range(1000))  # 6000 bytes, in uneven writes
    for at in range(0, len(data), 37):
        sp.write(data[at:at + 37])
    assert files(tmp_path) == {"7.58": 100, "7.59": 100}
    text, total = spool.recover(str(tmp_path), 150, half=100)[7]
    assert total == 6000 and text == data[-150:].decode()
    sp.remove()
    assert files(tmp_path) == {}


def test_a_huge_write_skips_what_would_be_rotated_out_at_once(tmp_path):
    sp = spool.Spool(str(tmp_path), 3, half=100)
    sp.write(b"a" * 50)
    sp.write(b"b" * 10_000 + b"end")
    assert sum(files(tmp_path).values()) <= 200
    text, total = spool.recover(str(tmp_path), 1000, half=100)[3]
    assert total == 10_053 and text.endswith("bend") and set(text[:-3]) == {"b"}


def test_the_buffer_feeds_its_spool_the_bytes_it_stores(tmp_path):
    buf = OutputBuffer(spool=spool.Spool(str(tmp_path), 1))
    buf.feed("stdout", "größe ".encode()[:3])  # half of ö
    buf.feed("stdout", "größe ".encode()[3:])
    buf.feed("stderr", b"err\n")
    assert spool.recover(str(tmp_path), 100) == {1: ("größe err\n", 12)}


def test_a_tail_cut_inside_a_character_starts_at_the_next_one(tmp_path):
    sp = spool.Spool(str(tmp_path), 2)
    sp.write("ü".encode() * 10)
    text, _ = spool.recover(str(tmp_path), 5)[2]
    assert text == "üü"


def test_a_failed_write_turns_the_spool_off_not_the_task(tmp_path):
    target = tmp_path / "missing" / "x"
    sp = spool.Spool(str(target), 1, half=10)
    os.makedirs(tmp_path / "missing")
    target.write_text("a file where the directory should be")
    sp.write(b"data")  # open fails (as on a full disk): no exception reaches the task
    # The way is clear now, yet the spool stays off: one failure, no more tries on every feed.
    target.unlink()
    target.mkdir()
    sp.write(b"more")
    assert files(target) == {} and spool.recover(str(target), 100) == {}
    sp.remove()
    assert files(target) == {}


def test_clear_empties_the_directory(tmp_path):
    spool.Spool(str(tmp_path), 5).write(b"x")
    spool.clear(str(tmp_path))
    assert files(tmp_path) == {} and spool.recover(str(tmp_path / "none"), 10) == {}
