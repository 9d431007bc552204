"""The real daemon over a ledger emptied, deleted or garbled between runs: task ids never repeat."""

import os
from pathlib import Path

import pytest

from tests.support.runner_home import Home, rpc

pytestmark = pytest.mark.e2e


def run_task(home: Home, cwd: str) -> int:
    res = rpc(home, "task.exec", {"session_id": "s", "cwd": cwd, "lang": "bash", "code": "echo ok",
                                  "wait_ms": 5000})
    assert res["task"]["state"] == "completed", res
    return res["task"]["task_id"]


def truncate(path: Path) -> None:
    os.truncate(path, 0)


def delete(path: Path) -> None:
    path.unlink()


def garble(path: Path) -> None:
    path.write_bytes(b"\x00not a database\xff" * 512)


@pytest.mark.parametrize("damage, kept", [(truncate, True), (delete, False), (garble, True)])
def test_damaged_ledger_never_repeats_an_id(home, tmp_path, damage, kept):
    assert home.cli("runner", "start").returncode == 0
    earlier = [run_task(home, str(tmp_path)) for _ in range(3)]
    assert home.cli("runner", "stop").returncode == 0
    ledger = home.path / "ledger.sqlite3"
    damage(ledger)

    assert home.cli("runner", "start").returncode == 0
    after = run_task(home, str(tmp_path))
    assert after > max(earlier)
    assert after < 10**9  # continued from the floor beside the ledger, not from the clock
    moved = [p for p in home.path.iterdir() if ".corrupt-" in p.name]
    assert bool(moved) == kept
    assert f"{ledger} was unusable" in (home.path / "runner.log").read_text()
    # And it holds across the next clean restart too.
    assert home.cli("runner", "restart").returncode == 0
    assert run_task(home, str(tmp_path)) > after
