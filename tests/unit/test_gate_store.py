"""The gates' ledger keeps a workspace's items in a row of their own (issue 31): a state-only
write leaves them alone, and a row written before that split is still read, then moved."""

from runner.core.gates.store import GateStore, Record


def test_a_state_write_keeps_the_items_and_a_pre_split_row_is_read_then_moved(tmp_path):
    store = GateStore(str(tmp_path))
    store._conn.execute("INSERT INTO workspaces (root, state, items, state_view, items_view, updated_at) "
                        "VALUES ('/w', '{}', '[1]', NULL, x'5b315d', 0)")  # as an older runner wrote it
    assert store.get("/w") == Record("{}", "[1]", None, b"[1]", True)
    assert store.get("/w", items=False) == Record("{}", None, None, b"[1]", True)
    assert store.put_state("/w", '{"phase": "EXECUTE"}', b"s", 1) and not store.put_state("/other", "{}", None, 1)
    assert store.get("/w") == Record('{"phase": "EXECUTE"}', "[1]", b"s", b"[1]", True)
    store.put("/w", Record('{"phase": "EXECUTE"}', "[2]", b"s", b"[2 ]"), 2)  # the view was edited
    assert store.get("/w") == Record('{"phase": "EXECUTE"}', "[2]", b"s", b"[2 ]", False)
    store.put("/w", Record('{"phase": "EXECUTE"}', "[2]", b"s", b"[2]"), 2)
    assert store._conn.execute("SELECT items, items_view FROM workspaces").fetchone() == ("", None)
    assert store._conn.execute("SELECT items_view, view_same FROM workspace_items").fetchone() == (None, 1)  # kept once
    store.put_state("/w", "{}", None, 3)
    assert store.get("/w") == Record("{}", "[2]", None, b"[2]", True) and store.known("/w") and not store.known("/x")
    store.close()
