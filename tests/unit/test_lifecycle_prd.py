"""Work items: the dependency graph (cycles named, links bidirectional, waves) and the rules
around it (evidence to complete, a person's approval for critical items)."""

import json
import os
from pathlib import Path

import pytest

from plugkit.lifecycle import errors, item_ops, prd
from plugkit.lifecycle.prd import Item
from plugkit.lifecycle.workspace import Workspace
from tests.support.lifecycle import check_receipt

NOW = 1000.0


def items(*specs):
    out = []
    for spec in specs:
        prd.add(out, Item(**spec))
    return out


def test_links_are_kept_bidirectional_whichever_side_is_named():
    graph = items({"id": "a", "subject": "A"}, {"id": "b", "subject": "B", "blocked_by": ["a"]},
                  {"id": "c", "subject": "C", "blocking": ["b"]})
    a, b, c = graph
    assert (a.blocking, b.blocked_by, c.blocking) == (["b"], ["a", "c"], ["b"])
    prd.set_links(graph, "b", blocked_by=["c"], blocking=None)
    assert (a.blocking, b.blocked_by, c.blocking) == ([], ["c"], ["b"])
    prd.set_links(graph, "c", blocked_by=None, blocking=[])
    assert (b.blocked_by, c.blocking) == ([], [])


def test_a_cycle_is_refused_and_named():
    graph = items({"id": "a", "subject": "A"}, {"id": "b", "subject": "B", "blocked_by": ["a"]},
                  {"id": "c", "subject": "C", "blocked_by": ["b"]})
    with pytest.raises(errors.Cycle) as caught:
        prd.set_links(graph, "a", blocked_by=["c"], blocking=None)
    assert caught.value.cycle == ["a", "b", "c", "a"]
    assert "a -> b -> c -> a" in caught.value.message
    assert graph[0].blocked_by == []  # nothing changed
    with pytest.raises(errors.Cycle, match="d -> d"):
        prd.add(graph, Item(id="d", subject="D", blocked_by=["d"]))


def test_unknown_dependencies_and_duplicate_ids_are_refused():
    graph = items({"id": "a", "subject": "A"})
    with pytest.raises(errors.Invalid, match="no work item zz"):
        prd.add(graph, Item(id="b", subject="B", blocking=["zz"]))
    with pytest.raises(errors.Conflict, match="already exists"):
        prd.add(graph, Item(id="a", subject="again"))
    assert [i.id for i in graph] == ["a"]


def test_hand_edits_are_made_consistent_on_load_and_unknown_keys_survive():
    raw = json.dumps([{"id": "a", "subject": "A", "blocking": ["b", "ghost"], "owner": "kim"},
                      {"id": "b", "subject": "B"}]).encode()
    a, b = prd.parse(raw)
    assert (a.blocking, b.blocked_by) == (["b"], ["a"])
    assert json.loads(prd.dump([a, b]))[0]["owner"] == "kim"


@pytest.mark.parametrize("raw,match", [(b"{", "not a JSON array"), (b"{}", "not a JSON array"),
                                       (b'[{"id":"a"}]', "not a JSON array of work items"),
                                       (b'[{"id":"a","subject":"x"},{"id":"a","subject":"y"}]', "twice")])
def test_a_broken_prd_is_reported_never_rewritten(raw, match):
    with pytest.raises(errors.Conflict, match=match):
        prd.parse(raw)


def test_ready_wave_and_waves():
    graph = items(*({"id": f"i{n}", "subject": str(n)} for n in range(5)))
    prd.set_links(graph, "i4", blocked_by=["i0", "i1"], blocking=None)
    graph[2].status = "in_progress"
    graph[3].status = "blocked"
    assert [i.id for i in prd.ready(graph)] == ["i0", "i1"]
    assert [i.id for i in prd.ready(graph, limit=1)] == ["i0"]
    assert prd.waves(graph) == [["i0", "i1", "i2", "i3"], ["i4"]]
    graph[0].status = graph[1].status = "completed"
    assert [i.id for i in prd.ready(graph)] == ["i4"]
    many = items(*({"id": f"m{n}", "subject": str(n)} for n in range(5)))
    assert len(prd.ready(many)) == 3  # the default wave size


def test_next_id_continues_the_w_sequence():
    assert prd.next_id([]) == "w1"
    assert prd.next_id(items({"id": "w7", "subject": "x"}, {"id": "other", "subject": "y"})) == "w8"


@pytest.fixture
def ws(tmp_path):
    return Workspace(os.path.realpath(tmp_path))


def receipt_for(ws, name="proof.txt"):
    Path(ws.root, name).write_text("tests passed\n")
    return item_ops.evidence_add(ws, None, name, "w1", "", NOW)


def test_completing_needs_evidence_that_still_verifies(ws):
    item_ops.prd_add(ws, {"subject": "login", "verify": "make test"}, NOW)
    with pytest.raises(errors.Conflict, match="requires naming evidence"):
        item_ops.prd_update(ws, "w1", {}, "completed", [])
    with pytest.raises(errors.NotFound, match="no evidence receipt"):
        item_ops.prd_update(ws, "w1", {}, "completed", ["abcdef0123"])
    receipt = receipt_for(ws)
    Path(ws.root, "proof.txt").write_text("edited\n")
    with pytest.raises(errors.Conflict, match="changed since"):
        item_ops.prd_update(ws, "w1", {}, "completed", [receipt.id[:8]])
    with pytest.raises(errors.Conflict, match="not a receipt of w1's check"):  # a file proves no run
        item_ops.prd_update(ws, "w1", {}, "completed", [receipt_for(ws).id[:8]])
    receipt = check_receipt(ws)
    done = item_ops.prd_update(ws, "w1", {}, "completed", [receipt.id[:8]])
    assert (done.status, done.evidence) == ("completed", [receipt.id])
    on_disk = json.loads(Path(ws.prd_path).read_text())
    assert on_disk[0]["status"] == "completed"


def test_an_item_cannot_start_or_finish_before_its_blockers(ws):
    item_ops.prd_add(ws, {"subject": "schema"}, NOW)
    item_ops.prd_add(ws, {"subject": "api", "blocked_by": ["w1"]}, NOW)
    with pytest.raises(errors.Conflict, match="blocked by unfinished w1"):
        item_ops.prd_update(ws, "w2", {}, "in_progress", [])
    with pytest.raises(errors.Conflict, match="blocked by unfinished w1"):
        item_ops.prd_update(ws, "w2", {}, "completed", [receipt_for(ws).id])


def test_critical_items_wait_for_a_person(ws):
    item_ops.prd_add(ws, {"subject": "migrate users", "risk": "critical"}, NOW)
    with pytest.raises(errors.Forbidden, match="plugkit approve w1"):
        item_ops.prd_update(ws, "w1", {}, "in_progress", [])
    with pytest.raises(errors.Forbidden, match="person's call"):
        item_ops.prd_update(ws, "w1", {"risk": "low"}, None, [])
    with pytest.raises(errors.Forbidden, match="critical"):
        item_ops.prd_add(ws, {"subject": "drop table", "risk": "critical", "status": "in_progress"}, NOW)
    assert item_ops.approval_list(ws)[1] == ["w1"]
    with pytest.raises(errors.Forbidden, match="not accepted from hooks"):
        item_ops.approval_grant(ws, "w1", "agent", "hook", NOW)
    with pytest.raises(errors.NotFound):
        item_ops.approval_grant(ws, "w9", "kim", "cli", NOW)
    approval = item_ops.approval_grant(ws, "w1", "kim", "cli", NOW)
    assert (approval.user, approval.via, approval.at) == ("kim", "cli", NOW)
    assert item_ops.prd_update(ws, "w1", {}, "in_progress", []).status == "in_progress"
    approvals, waiting = item_ops.approval_list(ws)
    assert [a.item_id for a in approvals] == ["w1"] and waiting == []


def test_updates_validate_fields_and_keep_the_file_consistent(ws):
    item_ops.prd_add(ws, {"subject": "a"}, NOW)
    item_ops.prd_add(ws, {"subject": "b"}, NOW)
    with pytest.raises(errors.Invalid, match="effort"):
        item_ops.prd_update(ws, "w1", {"effort": "huge"}, None, [])
    with pytest.raises(errors.Cycle):
        item_ops.prd_add(ws, {"id": "c", "subject": "c", "blocked_by": ["w1"], "blocking": ["w1"]}, NOW)
    item_ops.prd_update(ws, "w2", {"blocking": ["w1"], "subject": "b2"}, None, [])
    listing = item_ops.prd_list(ws)
    assert [(i.id, i.subject, i.blocked_by, i.blocking) for i in listing.items] == [
        ("w1", "a", ["w2"], []), ("w2", "b2", [], ["w1"])]
    assert listing.waves == [["w2"], ["w1"]]
    assert [i.id for i in item_ops.prd_ready(ws, 3).items] == ["w2"]
