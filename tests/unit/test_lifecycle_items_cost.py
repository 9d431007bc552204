"""Issue 31, part 2, against the runner's real ledger (sqlite): at 1000 items an add or an
update touches the item it changes and that item's neighbours only (links, cycle check,
rendering, the ledger's rows); the cache of parsed items is keyed by the ledger's rev, so
another runner's write is read again; an emptied view claims nothing."""

import json
import os

import pytest

from plugkit.lifecycle import authority, errors, gating, item_ops, items_view, prd
from plugkit.lifecycle.workspace import Workspace
from runner.system.stores.gates import GateStore

NOW = 1_700_000_000.0
N = 1000


@pytest.fixture
def home(tmp_path):
    return str(tmp_path / "home")


@pytest.fixture
def ws(tmp_path, home):
    os.makedirs(home)
    root = tmp_path / "w"
    root.mkdir()
    items = [{"id": f"w{i}", "subject": f"item {i}", "blocked_by": [f"w{i - 1}"] if i % 3 == 0 else []}
             for i in range(1, N + 1)]
    (root / ".prd").write_text(json.dumps(items, indent=2) + "\n")
    store = GateStore(home)
    yield Workspace(os.path.realpath(root), seal=b"k" * 32, ledger=store)
    store.close()


def _rows_written(store):
    store._conn.execute("CREATE TEMP TABLE written (id TEXT)")
    for event in ("INSERT", "UPDATE"):
        store._conn.execute(f"CREATE TEMP TRIGGER w_{event} AFTER {event} ON item_rows "
                            "BEGIN INSERT INTO written VALUES (new.id); END")
    return lambda: sorted(r[0] for r in store._conn.execute("SELECT id FROM written"))


def test_an_add_and_an_update_at_1000_items_touch_only_what_they_change(ws, monkeypatch):
    item_ops.prd_add(ws, {"subject": "first, to import the .prd"}, NOW)  # w1001
    written = _rows_written(ws.ledger)
    rendered = []
    real_render = prd.render
    monkeypatch.setattr(prd, "render", lambda item: rendered.append(item.id) or real_render(item))

    def whole_graph(*_a, **_k):
        raise AssertionError("a whole-graph pass on a one-item change")
    for name in ("edges_of", "relink", "parse"):
        monkeypatch.setattr(prd, name, whole_graph)
    monkeypatch.setattr(items_view, "_same", whole_graph)

    item_ops.prd_add(ws, {"subject": "new", "blocked_by": ["w5"], "blocking": ["w7"]}, NOW)
    item_ops.prd_update(ws, "w2", {"subject": "renamed", "blocked_by": ["w1"]}, None, [])
    with pytest.raises(errors.Cycle, match="w7 -> w1002 -> w7"):
        item_ops.prd_update(ws, "w7", {"blocking": ["w1002"]}, None, [])
    assert sorted(rendered) == ["w1", "w1002", "w2", "w5", "w7"]
    assert written() == ["w1", "w1002", "w2", "w5", "w7"]
    monkeypatch.undo()
    with open(ws.prd_path, "rb") as fh:
        on_disk = fh.read()
    assert on_disk == prd.dump(prd.parse(on_disk)) == ws.ledger.get(ws.root).items.encode()
    by_id = {i.id: i for i in prd.parse(on_disk)}
    assert by_id["w1002"].blocked_by == ["w5"] and by_id["w5"].blocking == ["w6", "w1002"]
    assert by_id["w7"].blocked_by == ["w1002"] and by_id["w2"].blocked_by == ["w1"]
    assert by_id["w1"].blocking == ["w2"]


def test_a_write_by_another_runner_on_the_same_ledger_is_read_again(ws, home):
    item_ops.prd_add(ws, {"subject": "mine"}, NOW)
    other = GateStore(home)
    try:
        theirs = Workspace(ws.root, seal=ws.seal, ledger=other)
        item_ops.prd_update(theirs, "w1", {"subject": "changed by the other runner"}, None, [])
    finally:
        other.close()
    assert gating.load_items(ws)[0].subject == "changed by the other runner"
    item_ops.prd_add(ws, {"subject": "mine again"}, NOW)  # written on top of theirs, not of a stale copy
    assert [i.subject for i in prd.parse(ws.ledger.get(ws.root).items.encode()) if i.id in ("w1", "w1002")] == [
        "changed by the other runner", "mine again"]


def test_an_emptied_prd_view_claims_nothing_and_the_next_change_writes_it_again(ws):
    item_ops.prd_add(ws, {"subject": "one more"}, NOW)
    held = ws.ledger.get(ws.root).items
    open(ws.prd_path, "wb").close()  # what a power loss can leave of a view written without an fsync
    assert authority.findings(ws) == []
    gating.add_mutable(ws, "port", None, "", NOW)
    with open(ws.prd_path) as fh:
        assert fh.read() == held
