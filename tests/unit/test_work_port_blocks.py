"""Port blocks leased to workers (runner/system/port_blocks.py) with real sockets and real flocks,
and the include patterns a worktree is made ready with (runner/core/work/ready.py)."""

import socket
from types import SimpleNamespace

import pytest

from runner.core.work import ready
from runner.core.work.model import Failed
from runner.system import port_blocks


def test_two_leases_never_share_a_port_until_one_is_released():
    a = port_blocks.lease(4, 31900, 31907)
    b = port_blocks.lease(4, 31900, 31907)
    try:
        assert not set(a.ports) & set(b.ports)
        assert a.env() == {"PORT": str(a.first), "PLUGKIT_PORTS": f"{a.first}-{a.first + 3}"}
        with pytest.raises(port_blocks.NoPorts):  # both blocks of the range are leased
            port_blocks.lease(4, 31900, 31907)
        b.release()
        c = port_blocks.lease(4, 31900, 31907)
        assert c.first == b.first
        c.release()
    finally:
        a.release()
        b.release()


def test_rejects_a_block_where_something_already_listens():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 31910))
        s.listen()
        got = port_blocks.lease(2, 31910, 31913)
        try:
            assert got.first == 31912  # the block holding the listener was passed over
        finally:
            got.release()


@pytest.mark.parametrize("pattern", ["../../etc/passwd", "config/../../x", "!../secret", "~/.ssh/id_rsa"])
def test_rejects_include_patterns_climbing_out_of_the_repository(tmp_path, pattern):
    with pytest.raises(Failed) as refused:
        ready.patterns(str(tmp_path), SimpleNamespace(work_include=(pattern,)))
    assert refused.value.reason == "not_ready" and pattern in refused.value.message


def test_reads_worktreeinclude_beside_work_include(tmp_path):
    (tmp_path / ".worktreeinclude").write_text("# local files\n\nconfig/local.toml\n!config/keep\n")
    assert ready.patterns(str(tmp_path), SimpleNamespace(work_include=(".env",))) == [
        ".env", "config/local.toml", "!config/keep"]
