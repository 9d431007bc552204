"""Gate operations cost what they change (issue 31): the ledger's items are parsed once per
version and rendered per changed item, state-only operations never read them, and the
cache can only be missed, never believed over the ledger."""

import json
import os

import pytest

from plugkit.lifecycle import authority, gating, hooks, items_view, prd, state as state_mod
from plugkit.lifecycle import item_ops as work
from plugkit.lifecycle.config import GateConfig
from plugkit.lifecycle.workspace import Workspace
from tests.support.lifecycle import KEY, MemoryLedger

NOW = 1_700_000_000.0


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "w"
    root.mkdir()
    ws = Workspace(os.path.realpath(root), seal=KEY, ledger=MemoryLedger())
    for n in range(12):
        work.prd_add(ws, {"subject": f"item {n}", "blocked_by": [f"w{n}"] if n % 3 == 2 else []}, NOW)
    return ws


def forbid_reading_items(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("the items were read")
    monkeypatch.setattr(prd, "parse", refuse)
    monkeypatch.setattr(items_view, "items", refuse)


def test_state_only_operations_and_the_hook_allow_path_never_read_the_items(ws, monkeypatch):
    forbid_reading_items(monkeypatch)
    gating.add_mutable(ws, "port", "5432", "", NOW)
    assert hooks.check(ws, GateConfig(), "PreToolUse", "Bash", {"command": "ls"}).decision == "allow"
    assert authority.findings(ws) == []
    assert state_mod.load(ws).unknown() == ["port"]


def test_a_state_only_write_rewrites_a_deleted_prd_view_from_the_ledger(ws, monkeypatch):
    held = ws.ledger.get(ws.root).items
    os.unlink(ws.prd_path)
    forbid_reading_items(monkeypatch)
    gating.add_mutable(ws, "port", None, "", NOW)
    with open(ws.prd_path) as fh:
        assert fh.read() == held


def test_a_write_renders_only_the_items_it_changed_byte_for_byte_as_prd_dump(ws, monkeypatch):
    rendered = []
    real = prd.render
    monkeypatch.setattr(prd, "render", lambda item: rendered.append(item.id) or real(item))
    work.prd_update(ws, "w5", {"subject": "renamed"}, None, [])
    assert rendered == ["w5"]
    rendered.clear()
    work.prd_add(ws, {"subject": "new", "blocked_by": ["w1"]}, NOW)
    assert sorted(rendered) == ["w1", "w13"]  # the new item and its blocker's `blocking`
    with open(ws.prd_path, "rb") as fh:
        on_disk = fh.read()
    assert on_disk == prd.dump(prd.parse(on_disk)) == ws.ledger.get(ws.root).items.encode()


def test_a_failed_transaction_leaves_nothing_in_the_cached_items(ws):
    with pytest.raises(RuntimeError):
        with state_mod.transaction(ws):
            items = gating.load_items(ws)
            items[0].status = "completed"
            items[1].blocked_by.append("w1")
            raise RuntimeError("refused half way")
    again = gating.load_items(ws)
    assert again[0].status == "pending" and again[1].blocked_by == []
    with state_mod.transaction(ws):  # the next writer too
        mine = gating.load_items(ws)
        assert mine[0].status == "pending" and mine[1].blocked_by == []


def test_a_reader_never_sees_the_writers_change_in_flight(ws):
    with state_mod.transaction(ws):
        gating.load_items(ws)[0].subject = "half made"
        assert _read_elsewhere(ws)[0].subject == "item 0"


def _read_elsewhere(ws):
    import threading
    out = []
    reader = threading.Thread(target=lambda: out.append(gating.load_items(ws)))
    reader.start()
    reader.join()
    return out[0]


def test_a_ledger_changed_by_another_process_is_read_again(ws):
    gating.load_items(ws)  # cached
    rec = ws.ledger.get(ws.root)
    data = json.loads(rec.items)
    data[0]["subject"] = "changed elsewhere"
    ws.ledger.rows[ws.root] = authority.Record(rec.state, prd.dump(prd.parse(json.dumps(data).encode())).decode(),
                                               rec.state_view, rec.items_view)
    assert gating.load_items(ws)[0].subject == "changed elsewhere"
