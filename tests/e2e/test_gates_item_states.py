"""A critical item is never in_progress or completed without a person's approval, whichever
path moves it (issue 28, item 1): `plugkit prd update` to either state, a risk raised on an
item already under way, a `.prd` the runner adopts on first contact. Tried for real against
the runner in a git repository with gates = "enforce"; `approve --list` keeps every
unapproved critical item in view, whatever its status."""

import json

import pytest

from tests.support.agent import Agent, make_repo
from tests.support.approvals import person, status

pytestmark = pytest.mark.e2e

CHECK = "test -f README"


@pytest.fixture
def agent(home, tmp_path):
    repo = make_repo(tmp_path / "repo", f'gates = "enforce"\nverify = "{CHECK}"\n')
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    return agent


def waiting(agent: Agent) -> list[str]:
    return agent.json("approve", "--list")["waiting"]



def test_a_critical_item_is_not_completed_without_an_approval(agent):
    agent.plugkit("prd", "add", "X", "--id", "c1", "--risk", "critical")
    ran, _ = agent.exec_task("true")
    receipt = agent.json("evidence", "add", "--task", str(ran))["id"]  # a receipt of any run
    refused = agent.plugkit("prd", "update", "c1", "--status", "completed", "--evidence", receipt, ok=False)
    assert "c1 is critical-risk: a person must approve it first" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) <= 2
    assert status(agent, "c1") == "pending"
    assert waiting(agent) == ["c1"]


def test_an_item_under_way_is_not_raised_to_critical_around_the_approval(agent):
    agent.plugkit("prd", "add", "Y", "--id", "w1")
    agent.plugkit("prd", "update", "w1", "--status", "in_progress")
    refused = agent.plugkit("prd", "update", "w1", "--risk", "critical", ok=False)
    assert "w1 is critical-risk: a person must approve it first" in refused.stderr
    assert waiting(agent) == []

    receipt = agent.json("prd", "verify", "w1")["receipt"]
    agent.plugkit("prd", "update", "w1", "--status", "completed", "--evidence", receipt)
    agent.plugkit("prd", "update", "w1", "--risk", "critical", ok=False)
    assert status(agent, "w1") == "completed"
    # A person's approval first, and the raise goes through: the rule is on the state.
    approved = person(agent.home, agent, "approve", "w1")
    assert approved.returncode == 0, approved.stdout
    agent.plugkit("prd", "update", "w1", "--risk", "critical")
    assert waiting(agent) == []


def test_a_prd_adopted_on_first_contact_brings_no_critical_item_under_way(home, tmp_path):
    """The runner's ledger has never seen this workspace: its `.prd` is imported, and a critical
    item written there as in_progress or completed (with a receipt this runner sealed) comes
    in as pending, waiting for a person."""
    repo = make_repo(tmp_path / "fresh", f'gates = "enforce"\nverify = "{CHECK}"\n')
    agent = Agent(home, repo)
    ran, _ = agent.exec_task(CHECK)  # starts the runner; reads alone never write the ledger
    sealed = agent.json("evidence", "add", "--task", str(ran))["id"]
    items = [{"id": "c1", "subject": "ship it", "status": "in_progress", "risk": "critical"},
             {"id": "c2", "subject": "ship more", "status": "completed", "risk": "critical", "evidence": [sealed]}]
    (repo / ".prd").write_text(json.dumps(items))
    listed = {i["id"]: i["status"] for i in agent.json("prd", "list")["items"]}
    assert listed == {"c1": "pending", "c2": "pending"}
    assert waiting(agent) == ["c1", "c2"]
    notices = " ".join(agent.json("gate", "status")["notices"])
    assert "c1 is critical-risk and no person approved it here: pending" in notices


def test_approve_list_keeps_a_critical_item_in_view_until_a_person_approves_it(agent):
    agent.plugkit("prd", "add", "Z", "--id", "c3", "--risk", "critical")
    assert waiting(agent) == ["c3"]
    approved = person(agent.home, agent, "approve", "c3")
    assert approved.returncode == 0, (approved.stdout, approved.stderr)
    agent.plugkit("prd", "update", "c3", "--status", "in_progress")
    receipt = agent.json("prd", "verify", "c3")["receipt"]
    agent.plugkit("prd", "update", "c3", "--status", "completed", "--evidence", receipt)
    listing = agent.json("approve", "--list")
    assert listing["waiting"] == [] and [a["item_id"] for a in listing["approvals"]] == ["c3"]
