"""The gate ledger's hash chain (runner.system.stores.gate_chain) on a real GateStore: an edit, a removal,
a reordering, an edit re-hashed to look whole, and a truncation behind a signed head, each named."""

import sqlite3

from runner.system.stores.gates import GateStore, Record


def _store(tmp_path) -> GateStore:
    store = GateStore(str(tmp_path))
    for n in range(4):
        store.add_receipt("/w", f"r{n}", n, float(n))
    store.put("/w", Record('{"phase":"PLAN","approvals":{}}', "[]", None, None), 5.0)
    store.put_state("/w", '{"phase":"EXECUTE","approvals":{"w1":{"at":6.0}}}', None, 6.0)
    return store


def _db(tmp_path):
    return sqlite3.connect(tmp_path / "gates.sqlite3", isolation_level=None)


def test_a_whole_chain_holds_and_records_every_kind(tmp_path):
    store = _store(tmp_path)
    breaks, count = store.audit()
    assert breaks == [] and count == 7
    kinds = [k for (k,) in _db(tmp_path).execute("SELECT kind FROM chain ORDER BY seq")]
    assert kinds == ["receipt"] * 4 + ["phase", "phase", "approval"]


def test_two_records_swapped_are_named_at_the_first(tmp_path):
    store = _store(tmp_path)
    db = _db(tmp_path)
    a, b = db.execute("SELECT body FROM chain WHERE seq IN (2, 3) ORDER BY seq").fetchall()
    db.execute("UPDATE chain SET body = ? WHERE seq = 2", b)
    db.execute("UPDATE chain SET body = ? WHERE seq = 3", a)
    assert store.audit()[0][0].seq == 2


def test_an_edit_rehashed_to_look_whole_breaks_its_successor_and_the_signed_head(tmp_path):
    from runner.system.stores import gate_chain as chain

    store = _store(tmp_path)
    assert store.seal("test", 7.0) == 7
    db = _db(tmp_path)
    seq, kind, root, body, prev = db.execute("SELECT seq, kind, root, body, prev FROM chain WHERE seq = 2").fetchone()
    body = body.replace('"task_id":1', '"task_id":9')
    db.execute("UPDATE chain SET body = ?, hash = ? WHERE seq = 2",
               (body, chain.record_hash(seq, kind, root, body, prev)))
    assert store.audit()[0][0].seq == 3 and "no longer follows" in store.audit()[0][0].text


def test_records_removed_from_the_end_behind_a_signed_head_are_found(tmp_path):
    store = _store(tmp_path)
    store.seal("test", 7.0)
    _db(tmp_path).execute("DELETE FROM chain WHERE seq = 7")
    texts = [b.text for b in store.audit()[0]]
    assert any("not the one whose hash was signed" in t for t in texts), texts


def test_an_unchanged_state_write_adds_no_record(tmp_path):
    store = _store(tmp_path)
    for n in range(5):
        store.put_state("/w", '{"phase":"EXECUTE","approvals":{"w1":{"at":6.0}},"n":%d}' % n, None, 7.0)
    assert store.audit() == ([], 7)
