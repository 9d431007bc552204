"""The id floor beside the ledger: an emptied, deleted or garbled ledger never restarts the ids."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.system import ledger as store
from runner.system.ledger import Ledger

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def path(tmp_path) -> str:
    return str(tmp_path / "ledger.sqlite3")


def used(path: str, block: int = 40) -> int:
    """A ledger that handed out ids 1..block; returns the last one."""
    with Ledger(path) as led:
        return led.reserve_ids(block) + block - 1


def moved_aside(path: str) -> list[str]:
    return sorted(p.name for p in Path(path).parent.iterdir() if ".corrupt-" in p.name)


def test_floor_follows_every_reserved_block(path):
    with Ledger(path) as led:
        led.reserve_ids(7)
        assert int(Path(path + store.FLOOR_SUFFIX).read_text()) == 7
        led.reserve_ids(3)
        assert int(Path(path + store.FLOOR_SUFFIX).read_text()) == 10
    assert oct(os.stat(path + store.FLOOR_SUFFIX).st_mode & 0o777) == "0o600"


def test_ledger_truncated_to_zero_is_moved_aside_and_ids_continue(path):
    last = used(path)
    os.truncate(path, 0)
    with Ledger(path) as led:
        assert led.recovered_from is not None and os.path.getsize(led.recovered_from) == 0
        assert led.reserve_ids(1) == last + 1
    assert len(moved_aside(path)) == 1


def test_deleted_ledger_continues_after_its_floor(path, caplog):
    last = used(path)
    os.unlink(path)
    with Ledger(path) as led:
        assert led.recovered_from is None  # nothing there to keep
        assert led.reserve_ids(1) == last + 1
    assert "deleted" in caplog.text and moved_aside(path) == []


def test_garbage_ledger_continues_exactly_after_its_floor_not_the_clock(path):
    last = used(path)
    Path(path).write_bytes(os.urandom(8192))
    with Ledger(path) as led:
        assert led.recovered_from is not None
        assert led.reserve_ids(1) == last + 1


def test_floor_ahead_of_a_healthy_ledger_skips_ids_and_keeps_the_ledger(path):
    # A kill between the floor's write and the ledger's commit: the ledger is fine, those ids unused.
    used(path, 5)
    Path(path + store.FLOOR_SUFFIX).write_text("12\n")
    with Ledger(path) as led:
        assert led.recovered_from is None
        assert led.reserve_ids(1) == 13
    assert moved_aside(path) == []


def test_garbled_floor_leaves_the_ledgers_own_mark_standing(path):
    last = used(path)
    Path(path + store.FLOOR_SUFFIX).write_bytes(b"\x00\xffnot a number")
    with Ledger(path) as led:
        assert led.recovered_from is None
        assert led.reserve_ids(1) == last + 1
    assert int(Path(path + store.FLOOR_SUFFIX).read_text()) == last + 1


@pytest.mark.parametrize("empty", [True, False])
def test_a_new_home_starts_at_one(path, empty):
    if empty:  # a runner killed after creating the file, before anything was written
        Path(path).write_bytes(b"")
    with Ledger(path) as led:
        assert led.recovered_from is None and led.reserve_ids(1) == 1


def test_ledger_from_before_the_floor_existed_gets_one(path):
    last = used(path)
    os.unlink(path + store.FLOOR_SUFFIX)
    with Ledger(path) as led:
        assert led.recovered_from is None
    assert int(Path(path + store.FLOOR_SUFFIX).read_text()) == last
    os.truncate(path, 0)
    with Ledger(path) as led:
        assert led.reserve_ids(1) == last + 1


def test_deleted_ledger_after_a_crash_moves_its_wal_aside_too(path):
    script = (
        "import os, sys\n"
        "from runner.system.ledger import Ledger\n"
        "led = Ledger(sys.argv[1])\n"
        "print(led.reserve_ids(9) + 8, flush=True)\n"
        "os._exit(0)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, path], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=30)
    assert os.path.exists(path + "-wal")
    os.unlink(path)
    with Ledger(path) as led:
        # sqlite checkpoints the moved -wal into the moved file on close: the evidence stays there.
        assert led.recovered_from is not None and os.path.exists(led.recovered_from)
        assert led.reserve_ids(1) == int(out.stdout) + 1
