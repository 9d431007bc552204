"""The gates' ledger keeps a workspace's items one row each (issue 31): a state-only write
leaves them alone, an item write stores the rows it names, and a row written before the
split is still read, then moved."""

import json

from plugkit.lifecycle import prd
from runner.system.stores.gates import GateStore, Record


def _text(*ids: str) -> str:
    return prd.join([prd.render(prd.Item(id=i, subject=f"item {i}")) for i in ids])


def test_a_state_write_keeps_the_items_and_a_pre_split_row_is_read_then_moved(tmp_path):
    store = GateStore(str(tmp_path))
    store._conn.execute("INSERT INTO workspaces (root, state, items, state_view, items_view, updated_at) "
                        "VALUES ('/w', '{}', '[1]', NULL, x'5b315d', 0)")  # as an older runner wrote it
    assert store.get("/w") == Record("{}", "[1]", None, b"[1]", True, 0)
    assert store.get("/w", items=False) == Record("{}", None, None, None, True, 0)  # the same bytes: not sent
    assert store.put_state("/w", '{"phase": "EXECUTE"}', b"s", 1) and not store.put_state("/other", "{}", None, 1)
    assert store.get("/w") == Record('{"phase": "EXECUTE"}', "[1]", b"s", b"[1]", True, 0)
    assert store.put("/w", Record('{"phase": "EXECUTE"}', "[2]", b"s", b"[2 ]"), 2) == 1  # the view was edited
    assert store.get("/w") == Record('{"phase": "EXECUTE"}', "[2]", b"s", b"[2 ]", False, 1)  # not items: kept whole
    two = _text("a", "b")
    assert store.put("/w", Record("{}", two, b"s", two.encode()), 3) == 2
    assert store._conn.execute("SELECT items, items_view FROM workspaces").fetchone() == ("", None)
    assert store._conn.execute("SELECT items, items_view, view_same FROM workspace_items").fetchone() == ("", None, 1)
    assert [r[0] for r in store._conn.execute("SELECT id FROM item_rows ORDER BY pos")] == ["a", "b"]
    store.put_state("/w", "{}", None, 4)
    assert store.get("/w") == Record("{}", two, None, two.encode(), True, 2) and store.known("/w")
    assert not store.known("/x")
    store.close()


def test_an_item_write_stores_only_the_rows_it_names_and_new_ones_last(tmp_path):
    store = GateStore(str(tmp_path))
    store.put("/w", Record("{}", _text("a", "b", "c"), None, None), 1)
    store._conn.execute("CREATE TABLE written (id TEXT)")
    store._conn.execute("CREATE TRIGGER w1 AFTER UPDATE ON item_rows BEGIN INSERT INTO written VALUES (new.id); END")
    store._conn.execute("CREATE TRIGGER w2 AFTER INSERT ON item_rows BEGIN INSERT INTO written VALUES (new.id); END")
    b2 = prd.render(prd.Item(id="b", subject="renamed"))
    d = prd.render(prd.Item(id="d", subject="new"))
    after = prd.join([prd.render(prd.Item(id="a", subject="item a")), b2,
                      prd.render(prd.Item(id="c", subject="item c")), d])
    assert store.put_items("/w", "{}", None, after, [("b", b2), ("d", d)], after.encode(), 2) == 2
    assert [r[0] for r in store._conn.execute("SELECT id FROM written")] == ["b", "d"]
    got = store.get("/w")
    assert got.items == after and got.items_view == after.encode() and got.view_is_items
    assert [i["subject"] for i in json.loads(got.items)] == ["item a", "renamed", "item c", "new"]
    store.close()


def test_an_item_write_to_a_list_held_whole_splits_it(tmp_path):
    store = GateStore(str(tmp_path))
    store._conn.execute("INSERT INTO workspaces (root, state, items, state_view, items_view, updated_at) "
                        "VALUES ('/w', '{}', ?, NULL, NULL, 0)", (_text("a"),))  # an older runner's row
    two = _text("a", "b")
    store.put_items("/w", "{}", None, two, [("b", prd.render(prd.Item(id="b", subject="item b")))], None, 1)
    assert [r[0] for r in store._conn.execute("SELECT id FROM item_rows ORDER BY pos")] == ["a", "b"]
    assert store.get("/w").items == two
    store.close()
