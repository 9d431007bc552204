"""Task records for the ledger's tests, and the `path` fixture of a fresh ledger file."""

from pathlib import Path

import pytest

from runner.system.ledger import TaskRecord

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_700_000_000.0


def rec(task_id: int, state: str = "running", **kw) -> TaskRecord:
    return TaskRecord(task_id=task_id, session_id="s1", cwd="/w", lang="python",
                      code_sha256="ab" * 32, state=state, started_at=NOW, **kw)


def done(task_id: int, ended_at: float = NOW + 1, **kw) -> TaskRecord:
    return rec(task_id, "completed", ended_at=ended_at, exit_code=0, reason="exit_zero", **kw)


@pytest.fixture
def path(tmp_path) -> str:
    return str(tmp_path / "ledger.sqlite3")
