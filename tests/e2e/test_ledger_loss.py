"""Task ids never repeat, even when the ledger is truncated to 0 bytes, deleted or garbage (issue 17.4)."""

import pytest

from tests.support.runner_home import Home, rpc

pytestmark = pytest.mark.e2e

DAMAGE = {
    "truncated": lambda path: path.write_bytes(b""),
    "deleted": lambda path: path.unlink(),
    "garbage": lambda path: path.write_bytes(b"\x13not a database\x00" * 4096),
}


def run(home: Home, cwd: str) -> int:
    res = rpc(home, "task.exec", {"session_id": "s", "cwd": cwd, "lang": "bash", "code": "true",
                                  "wait_ms": 10_000})
    return res["task"]["task_id"]


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_ids_continue_after_the_ledger_is_lost(home: Home, tmp_path, damage):
    assert home.cli("runner", "start").returncode == 0
    try:
        before = [run(home, str(tmp_path)) for _ in range(3)]
        assert home.cli("runner", "stop").returncode == 0
        ledger = home.path / "ledger.sqlite3"
        for sibling in ("-wal", "-shm"):
            (home.path / f"ledger.sqlite3{sibling}").unlink(missing_ok=True)
        DAMAGE[damage](ledger)
        assert home.cli("runner", "start").returncode == 0
        after = run(home, str(tmp_path))
        assert after > max(before), f"task_{after} repeats an id handed out before ({before})"
        kept = list(home.path.glob("ledger.sqlite3.corrupt-*"))
        assert bool(kept) == (damage != "deleted")  # the damaged file is kept for a post-mortem
        # An earlier task's id now names nothing, rather than some new task.
        assert rpc(home, "task.list", {"session_id": "s", "cwd": str(tmp_path)})["tasks"][-1]["task_id"] == after
    finally:
        home.cli("runner", "stop")
        home.stop_all()
