"""The ledger as source of truth and the workspace files as its views (plugkit.lifecycle.authority),
against a hand-written in-memory ledger: what counts as tampering, what is a proposal, what
clears a finding, and what a first contact imports."""

import json
import os

import pytest

from plugkit.lifecycle import authority, evidence, gating, item_ops, state as state_mod
from plugkit.lifecycle.workspace import Workspace
from tests.support.lifecycle import KEY, MemoryLedger, check_receipt

NOW = 1_700_000_000.0


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "w"
    root.mkdir()
    return Workspace(os.path.realpath(root), seal=KEY, ledger=MemoryLedger())


def read(path: str):
    with open(path) as fh:
        return json.load(fh)


def add_items(ws, *subjects):
    for subject in subjects:
        item_ops.prd_add(ws, {"subject": subject}, NOW)


def test_views_follow_the_ledger_and_an_honest_write_leaves_nothing_to_report(ws):
    add_items(ws, "one", "two")
    assert [i["id"] for i in read(ws.prd_path)] == ["w1", "w2"]
    assert read(ws.state_path)["plan_added"] == ["item w1", "item w2"]
    assert authority.findings(ws) == []


def test_a_status_edited_by_hand_is_a_finding_and_never_the_truth(ws):
    add_items(ws, "one")
    items = read(ws.prd_path)
    items[0]["status"] = "completed"
    with open(ws.prd_path, "w") as fh:
        json.dump(items, fh)
    [finding] = authority.findings(ws)
    assert (finding.file, finding.field, finding.view, finding.runner) == (".prd", "item w1 status", "completed",
                                                                          "pending")
    assert [i.status for i in gating.load_items(ws)] == ["pending"]
    # A write through plugkit lands in the ledger and leaves the edited view for a person to see.
    item_ops.prd_update(ws, "w1", {"subject": "one, renamed"}, None, [])
    assert read(ws.prd_path)[0]["subject"] == "one"
    assert gating.load_items(ws)[0].subject == "one, renamed"
    assert [f.field for f in authority.findings(ws)] == ["item w1 status"]


def test_redoing_the_edit_through_plugkit_clears_it(ws):
    add_items(ws, "one")
    items = read(ws.prd_path)
    items[0]["status"] = "in_progress"
    with open(ws.prd_path, "w") as fh:
        json.dump(items, fh)
    assert authority.findings(ws)
    item_ops.prd_update(ws, "w1", {}, "in_progress", [])
    assert authority.findings(ws) == []
    assert read(ws.prd_path)[0]["status"] == "in_progress"


def test_state_json_edits_are_findings_by_field_and_restore_drops_them(ws):
    gating.add_mutable(ws, "port", "5432", "", NOW)
    data = read(ws.state_path)
    data["phase"] = "COMPLETE"
    data["mutables"]["port"]["status"] = "KNOWN"
    data["notices"] = ["harmless"]  # bookkeeping makes no claim
    with open(ws.state_path, "w") as fh:
        json.dump(data, fh)
    assert sorted(f.field for f in authority.findings(ws)) == ["mutables.port.status", "phase"]
    assert state_mod.load(ws).phase == "PLAN" and state_mod.load(ws).unknown() == ["port"]
    with ws.locked():
        dropped = authority.restore(ws)
    assert len(dropped) == 2 and authority.findings(ws) == []
    assert read(ws.state_path)["phase"] == "PLAN"


def test_a_pending_item_added_by_hand_is_a_proposal_adopted_by_the_next_write(ws):
    add_items(ws, "one")
    items = read(ws.prd_path)
    items.append({"id": "idea", "subject": "from a person"})
    with open(ws.prd_path, "w") as fh:
        json.dump(items, fh)
    snap = authority.load(ws)
    assert snap.findings == [] and snap.proposed == ["idea"]
    assert [i.id for i in gating.load_items(ws)] == ["w1", "idea"]  # open work before it is adopted
    gating.add_mutable(ws, "x", None, "", NOW)  # any write
    assert authority.load(ws).proposed == [] and "idea" in ws.ledger.get(ws.root).items
    assert "item idea" in state_mod.load(ws).plan_added


def test_first_contact_imports_items_but_not_completion_without_sealed_receipts(tmp_path):
    root = tmp_path / "old"
    root.mkdir()
    plain = Workspace(os.path.realpath(root))  # the files as an older plugkit (or anyone) left them
    for subject in ("done before", "done, honestly", "done, a file says", "critical, under way"):
        item_ops.prd_add(plain, {"subject": subject, "verify": "make test"}, NOW)
    items = read(plain.prd_path)
    ws = Workspace(plain.root, seal=KEY, ledger=MemoryLedger())
    (root / "report.txt").write_text("all green\n")
    receipt = check_receipt(ws)  # sealed by "the runner": a green run of the items' check
    in_a_file = evidence.record_file(ws, "report.txt", "w3", "", NOW)
    items[0].update(status="completed", evidence=["0123456789abcdef0123"])
    items[1].update(status="completed", evidence=[receipt.id])
    items[2].update(status="completed", evidence=[in_a_file.id])
    items[3].update(status="in_progress", risk="critical")
    with open(plain.prd_path, "w") as fh:
        json.dump(items, fh)
    st = state_mod.load(ws)
    assert [(i.id, i.status) for i in gating.load_items(ws)] == [
        ("w1", "pending"), ("w2", "completed"), ("w3", "pending"), ("w4", "pending")]
    assert any("state.json predates the runner's ledger" in n for n in st.notices)
    assert any("w1 was marked completed in .prd without receipts" in n for n in st.notices)
    assert any("w3 was marked completed in .prd without a receipt of its check" in n for n in st.notices)
    assert any("w4 is critical-risk and no person approved it here" in n for n in st.notices)
    assert authority.findings(ws) == []  # what was there at first contact is not an edit
