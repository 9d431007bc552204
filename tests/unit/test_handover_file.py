"""The handover file of the in-place restart (runner/system/handover.py) is taken only when it is
the one this very process's previous image wrote: a stale, foreign, linked, loosened, malformed
or replayed file is refused (and removed); and a task's output and spool go on at the same offsets."""

import os
import socket
import time

import pytest

from runner.core.tasks.output import OutputBuffer
from runner.system import handover as ho
from runner.system import spool as spool_mod

PORT = 40123


def _handover(**over) -> ho.Handover:
    fields = dict(pid=os.getpid(), nonce="n0nce", written_at=time.time(), token="t", port=PORT)
    return ho.Handover(**{**fields, **over})


def test_the_file_this_process_was_told_about_is_taken_once(tmp_path):
    ho.write(str(tmp_path), _handover())
    assert os.stat(ho.path(str(tmp_path))).st_mode & 0o777 == 0o600
    assert ho.read(str(tmp_path), "n0nce", PORT).token == "t"
    with pytest.raises(ho.Refused, match="no handover file"):  # read once: it is gone
        ho.read(str(tmp_path), "n0nce", PORT)


@pytest.mark.parametrize("why, make", [
    ("nonce", lambda d: ho.write(d, _handover(nonce="someone-elses"))),
    ("pid", lambda d: ho.write(d, _handover(pid=1))),
    ("stale", lambda d: ho.write(d, _handover(written_at=time.time() - 3600))),
    ("port", lambda d: ho.write(d, _handover(port=PORT + 1))),
    ("malformed", lambda d: _plain(d, b'{"pid": ')),
    ("unknown field", lambda d: _plain(d, _handover().model_dump_json()[:-1].encode() + b', "x": 1}')),
    ("loosened", lambda d: (_plain(d, _handover().model_dump_json().encode()), os.chmod(ho.path(d), 0o644))),
    ("symlink", lambda d: (_plain(d + "/real", _handover().model_dump_json().encode(), name="x.json"),
                           os.symlink(d + "/real/x.json", ho.path(d)))),
    ("hard link", lambda d: (_plain(d, _handover().model_dump_json().encode()),
                             os.link(ho.path(d), d + "/other"))),
    ("old file", lambda d: (_plain(d, _handover().model_dump_json().encode()),
                            os.utime(ho.path(d), (time.time() - 3600,) * 2))),
])
def test_a_file_that_is_not_exactly_ours_is_refused_and_removed(tmp_path, why, make):
    make(str(tmp_path))
    with pytest.raises(ho.Refused):
        ho.read(str(tmp_path), "n0nce", PORT)
    assert not os.path.lexists(ho.path(str(tmp_path)))


def test_a_start_that_was_no_handover_refuses_any_file(tmp_path):
    ho.write(str(tmp_path), _handover())
    with pytest.raises(ho.Refused, match="not a handover"):
        ho.read(str(tmp_path), None, PORT)


def test_a_file_of_another_uid_is_refused():
    st = os.stat_result((0o100600, 0, 0, 1, os.geteuid() + 1, 0, 10, 0, int(time.time()), 0))
    with pytest.raises(ho.Refused, match="owned by uid"):
        ho._check_file(st)


def test_the_environment_names_the_inherited_fds_or_nothing():
    got = ho.Inherited.parse(ho.Inherited("abc", "12-ff", 5, 6).env())
    assert got == ho.Inherited("abc", "12-ff", 5, 6)
    for bad in (None, "", "abc", "abc:12-ff:x:6", ":12-ff:5:6"):
        assert ho.Inherited.parse(bad) is None


def test_only_our_listening_socket_on_our_port_is_taken():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        fd = os.dup(sock.fileno())
        taken = ho.listening_socket(fd, port)
        taken.close()
        with pytest.raises(ho.Refused):
            ho.listening_socket(sock.fileno(), port + 1)
    r, w = os.pipe()
    with pytest.raises(ho.Refused):
        ho.listening_socket(r, port)
    assert ho.is_pipe(r) and not ho.is_pipe(None)
    os.close(r), os.close(w)


def test_a_pid_is_adopted_only_as_our_own_child_with_its_start_time():
    assert not ho.own_child(os.getpid(), ho.start_ticks(os.getpid()))  # ourselves: not our child
    assert not ho.own_child(1, ho.start_ticks(1) or 0)


def test_output_and_spool_go_on_at_the_same_offsets(tmp_path):
    spool = spool_mod.Spool(str(tmp_path), 7, half=16)
    old = OutputBuffer(64, spool=spool)
    old.feed("stdout", b"one\n")
    old.feed("stderr", b"two \xc3")  # half a character held back across the handover
    old.feed("stdout", b"x" * 70)  # past the cap: the start moves on
    spool.flush()
    start, chunks, pending = old.dump()
    new = OutputBuffer.restored(64, start, chunks, pending, spool_mod.Spool(str(tmp_path), 7, half=16, total=old.end))
    assert (new.start, new.end) == (old.start, old.end)
    assert new.read(0, 1000) == old.read(0, 1000)
    new.feed("stderr", b"\xa9!")
    new.feed("stdout", b"after\n")
    new.spool.flush()
    assert new.read(old.end, 100).chunks == [("stderr", "\u00e9!"), ("stdout", "after\n")]
    text, total = spool_mod.recover(str(tmp_path), 1000, half=16)[7]
    assert total == new.end and text.endswith("x\u00e9!after\n")


def _plain(directory: str, data: bytes, name: str = ho.FILE) -> None:
    os.makedirs(directory, exist_ok=True)
    fd = os.open(os.path.join(directory, name), os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, data)
    os.close(fd)
