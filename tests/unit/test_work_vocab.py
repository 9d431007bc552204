"""plugkit work's states, moves and reason words are plugkit.vocab's data, enforced in one place
(ItemRun.enter, Run.enter), and the reason table holds every word the work core produces."""

import ast
from pathlib import Path

import pytest

from plugkit.vocab import (WORK_ALLOWED, WORK_HELD_REASONS, WORK_ITEM_STATES, WORK_REASONS, WORK_RETRIED_REASONS,
                           WORK_RUN_ALLOWED, WORK_RUN_STATES)
from runner.core.work.model import BadMove, ItemRun, Run

CORE = Path(__file__).resolve().parents[2] / "runner" / "core" / "work"


def _words(node: ast.AST) -> set[str]:
    """Every string constant in an argument (`"a" if x else "b"` gives both)."""
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def produced() -> tuple[set[str], set[str]]:
    """(state words, reason words) the work core passes to Failed(STATE, REASON, ..) and .enter(STATE, NOW, REASON)."""
    states, reasons = set(), set()
    for path in sorted(CORE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name == "Failed" and len(node.args) >= 2:
                states |= _words(node.args[0])
                reasons |= _words(node.args[1])
            elif name == "enter" and len(node.args) >= 3 and isinstance(node.func, ast.Attribute):
                reasons |= _words(node.args[2]) if isinstance(node.args[2], (ast.Constant, ast.IfExp)) else set()
    return states, reasons


def test_every_reason_word_the_work_core_produces_is_in_the_table():
    states, reasons = produced()
    assert len(reasons) >= 15, reasons  # the scan sees the core (a refactor that hides the words fails here)
    assert reasons - set(WORK_REASONS) == set()
    assert states - set(WORK_ITEM_STATES) == set()
    assert WORK_HELD_REASONS | WORK_RETRIED_REASONS <= set(WORK_REASONS)


def test_the_tables_cover_every_state():
    assert set(WORK_ALLOWED) == set(WORK_ITEM_STATES)
    assert all(targets <= set(WORK_ITEM_STATES) for targets in WORK_ALLOWED.values())
    assert set(WORK_RUN_ALLOWED) == set(WORK_RUN_STATES)


def test_an_item_moves_only_as_the_table_allows():
    it = ItemRun(id="w1", subject="s")
    for state in ("spawning", "running", "verifying", "landing"):
        it.enter(state, 1.0)
    it.enter("completed", 2.0, "landed")
    assert it.ended_at == 2.0
    with pytest.raises(BadMove, match="completed to running"):
        it.enter("running", 3.0)
    with pytest.raises(BadMove, match="no reason word"):
        ItemRun(id="w2", subject="s").enter("blocked", 1.0, "because")
    it.enter("rejected", 4.0, "rolled_back")  # a person's rollback
    with pytest.raises(BadMove):
        it.enter("queued", 5.0)


def test_a_run_moves_only_as_the_table_allows():
    run = Run(id="r1", workspace="/w", worker="command", parallel=1, afk=False, merge="ff", branch="main",
              base="abc", started_at=0.0, stall_min=1.0)
    run.enter("waiting", "w1 waits")
    run.enter("running", None)
    run.enter("done", None, 9.0)
    assert (run.state, run.ended_at) == ("done", 9.0)
    with pytest.raises(BadMove, match="done to running"):
        run.enter("running", None)


def test_the_work_core_builds_no_wire_model():
    # Domain inputs in (RunRequest), shapes out in runner/rpc/shapes.py: the core never sees the wire.
    for path in sorted(CORE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("plugkit.protocol"), (path.name, node.module)
