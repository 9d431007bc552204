"""Where an item's status changes (plugkit.lifecycle.item_states): the move table, a critical
item's approval as a rule of the state, a completion only on a green run of the item's own
check at the current HEAD, and a check changed only by a person. The pure model, no runner."""

import os

import pytest

from plugkit import vocab
from plugkit.lifecycle import errors, item_ops, item_states
from plugkit.lifecycle.item_states import Person, Site
from plugkit.lifecycle.workspace import Workspace
from tests.support.lifecycle import CHECK, check_receipt

NOW = 1000.0


@pytest.fixture
def ws(tmp_path):
    return Workspace(os.path.realpath(tmp_path))


def test_every_status_has_its_row_and_a_completed_item_is_never_parked_as_blocked(ws):
    assert set(vocab.ITEM_ALLOWED) == set(vocab.ITEM_STATES)
    item_ops.prd_add(ws, {"subject": "a", "verify": CHECK}, NOW)
    item_ops.prd_update(ws, "w1", {}, "completed", [check_receipt(ws).id])
    with pytest.raises(errors.Conflict, match="cannot go from completed to blocked"):
        item_ops.prd_update(ws, "w1", {}, "blocked", [])
    assert item_ops.prd_update(ws, "w1", {}, "pending", []).status == "pending"  # reopened


def test_completion_needs_a_green_run_of_the_items_own_check_at_head(ws):
    item_ops.prd_add(ws, {"subject": "a", "verify": CHECK}, NOW)
    repo = Site(repo=True, head="b" * 40)
    for receipt, why in ((check_receipt(ws, "true"), "is not a receipt of w1's check"),
                         (check_receipt(ws, lang="python"), "is not a receipt of w1's check"),
                         (check_receipt(ws, exit_code=1), "check ended failed"),
                         (check_receipt(ws), "at no known git HEAD"),
                         (check_receipt(ws, head="a" * 40), "HEAD moved since")):
        with pytest.raises(errors.Conflict, match=why):
            item_ops.prd_update(ws, "w1", {}, "completed", [receipt.id], repo)
    good = check_receipt(ws, head="b" * 40)
    assert item_ops.prd_update(ws, "w1", {}, "completed", [good.id], repo).status == "completed"


def test_the_workspace_check_stands_in_and_no_check_completes_nothing(ws):
    item_ops.prd_add(ws, {"subject": "a"}, NOW)
    with pytest.raises(errors.Conflict, match="w1 has no check"):
        item_ops.prd_update(ws, "w1", {}, "completed", [check_receipt(ws).id])
    done = item_ops.prd_update(ws, "w1", {}, "completed", [check_receipt(ws).id], Site(verify=CHECK))
    assert done.status == "completed"


def test_a_critical_item_is_held_to_its_approval_in_every_state(ws):
    item_ops.prd_add(ws, {"subject": "c", "risk": "critical", "verify": CHECK}, NOW)
    for status in vocab.APPROVED_ONLY_STATES:
        with pytest.raises(errors.Forbidden, match="a person must approve it first"):
            item_ops.prd_update(ws, "w1", {}, status, [check_receipt(ws).id])
    item_ops.prd_add(ws, {"subject": "d", "verify": CHECK}, NOW)
    item_ops.prd_update(ws, "w2", {}, "in_progress", [])
    with pytest.raises(errors.Forbidden, match="w2 is critical-risk"):
        item_ops.prd_update(ws, "w2", {"risk": "critical"}, None, [])
    assert item_ops.approval_list(ws)[1] == ["w1"]


def test_a_check_once_there_is_changed_only_by_a_person(ws):
    item_ops.prd_add(ws, {"subject": "a", "verify": CHECK}, NOW)
    item_ops.prd_add(ws, {"subject": "b"}, NOW)
    agent = Person(False, "asked from inside a plugkit task")
    with pytest.raises(errors.Forbidden, match="changing w1's check is a person's act"):
        item_ops.prd_update(ws, "w1", {"verify": "true"}, None, [], Site(), agent)
    with pytest.raises(errors.Forbidden, match="changing w2's check"):  # the workspace's counts as its check
        item_ops.prd_update(ws, "w2", {"verify": "true"}, None, [], Site(verify=CHECK), agent)
    assert item_ops.prd_update(ws, "w1", {"verify": CHECK}, None, [], Site(), agent).verify == CHECK  # unchanged
    assert item_ops.prd_update(ws, "w2", {"verify": "true"}, None, [], Site(), agent).verify == "true"  # none before
    assert item_ops.prd_update(ws, "w1", {"verify": "true"}, None, [], Site(), Person(True, "")).verify == "true"
    assert item_states.check_of(item_ops.prd_list(ws).items[1], Site(verify=CHECK)) == "true"
