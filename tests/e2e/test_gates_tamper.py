"""The runner's ledger is the source of truth; `.plugkit/state.json` and `.prd` are its views
(issue 20). Edits made to them with a shell command, as an agent skipping the work would,
are performed for real against the runner in a git repository with gates = "enforce":
each is never taken as true, and is shown as `tampered` in gate status, the SessionStart
context, the Stop gate and VERIFY -> COMPLETE until it is reverted or redone."""

import json
import subprocess

import pytest

from tests.support.agent import Agent, make_repo

pytestmark = pytest.mark.e2e


@pytest.fixture
def agent(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "enforce"\nverify = "true"\n')
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    return agent


def shell(agent: Agent, command: str) -> None:
    """The agent edits a view from its shell. The hook refuses the spelling it can see; the
    edit is then made anyway, as another spelling, an editor or a person would make it,
    so what follows tests the runner's detection, not the hook."""
    decision, reason = agent.bash(command)
    assert decision == "deny" and "views of the runner's ledger" in reason, command
    subprocess.run(["bash", "-c", command], cwd=agent.repo, check=True)


def status(agent: Agent) -> dict:
    return agent.json("gate", "status")


def context(agent: Agent) -> str:
    return json.loads(agent.hook("SessionStart", source="resume").stdout)["hookSpecificOutput"]["additionalContext"]


FORGE_STATE = """python3 - <<'EOF'
import json
p = ".plugkit/state.json"
s = json.load(open(p))
s["phase"] = "COMPLETE"
s["mutables"]["greeting"].update(status="KNOWN", value="hello", resolved_by="0123456789abcdef0123")
s["approvals"]["w1"] = {"item_id": "w1", "user": "alice", "via": "cli", "at": 1.0}
s["verify"] = {"task_id": 1, "session_id": "x", "started_at": 1.0, "outcome": "green"}
json.dump(s, open(p, "w"))
EOF"""


def test_state_json_edited_by_a_shell_command_is_not_believed_and_is_shown(agent):
    agent.plugkit("mutable", "add", "greeting", "--expected", "hello")
    agent.plugkit("prd", "add", "ship it", "--risk", "critical")
    shell(agent, FORGE_STATE)

    st = status(agent)
    assert st["phase"] == "PLAN" and st["unknown_mutables"] == ["greeting"]
    tampered = " | ".join(st["tampered"])
    for field in ("phase says \"COMPLETE\"", "mutables.greeting.status says \"KNOWN\"", "approvals.w1",
                  "verify.outcome says \"green\""):
        assert field in tampered, (field, tampered)
    assert "TAMPERED" in agent.plugkit("gate", "status").stdout
    assert "TAMPERED (edited outside plugkit, not believed): .plugkit/state.json" in context(agent)
    assert [m["status"] for m in agent.json("mutable", "list")["mutables"]] == ["UNKNOWN"]
    assert agent.json("approve", "--list")["waiting"] == ["w1"]  # the forged approval counts for nothing
    refused = agent.plugkit("prd", "update", "w1", "--status", "in_progress", ok=False)
    assert "a person must approve it first" in refused.stderr
    blocked, reason = agent.stop()
    assert blocked and "tampered (edited outside plugkit" in reason and "phase is PLAN" in reason

    # Writes through plugkit go to the ledger and leave the edited view alone, for a person to see.
    agent.plugkit("mutable", "add", "farewell")
    assert json.loads((agent.repo / ".plugkit" / "state.json").read_text())["phase"] == "COMPLETE"
    assert sorted(m["name"] for m in agent.json("mutable", "list")["mutables"]) == ["farewell", "greeting"]

    dropped = agent.json("gate", "restore")["dropped"]
    assert any("phase" in d for d in dropped)
    st = status(agent)
    assert st["tampered"] == [] and any("views restored" in n for n in st["notices"])
    view = json.loads((agent.repo / ".plugkit" / "state.json").read_text())
    assert view["phase"] == "PLAN" and sorted(view["mutables"]) == ["farewell", "greeting"]
    assert "TAMPERED" not in context(agent)


def test_prd_marked_completed_by_hand_does_not_let_the_agent_stop(agent):
    agent.plugkit("prd", "add", "write the code")
    agent.plugkit("prd", "add", "write the docs")
    honest = (agent.repo / ".prd").read_bytes()
    shell(agent, "sed -i 's/\"status\": \"pending\"/\"status\": \"completed\"/' .prd")
    assert b'"completed"' in (agent.repo / ".prd").read_bytes()

    assert [i["status"] for i in agent.json("prd", "list")["items"]] == ["pending", "pending"]
    assert sorted(status(agent)["tampered"]) == [
        '.prd: item w1 status says "completed", the runner holds "pending"',
        '.prd: item w2 status says "completed", the runner holds "pending"']
    blocked, reason = agent.stop()
    assert blocked and "open work items: w1, w2" in reason and "tampered" in reason

    # Reverted by hand: the view agrees with the ledger again, nothing is left to show.
    (agent.repo / ".prd").write_bytes(honest)
    assert status(agent)["tampered"] == []


def test_an_item_added_by_hand_as_pending_is_a_proposal_and_one_added_completed_is_not(agent):
    agent.plugkit("prd", "add", "first")
    items = json.loads((agent.repo / ".prd").read_text())
    items.append({"id": "idea", "subject": "proposed by a person in their editor"})
    items.append({"id": "done", "subject": "claimed done", "status": "completed", "evidence": ["abcdef"]})
    (agent.repo / ".prd").write_text(json.dumps(items))

    st = status(agent)
    assert st["tampered"] == ['.prd: item done says "added as completed", the runner holds "no such item"']
    assert [i["id"] for i in agent.json("prd", "list")["items"]] == ["w1", "idea"]  # read as open work now
    agent.plugkit("prd", "update", "w1", "--status", "in_progress")  # any write adopts the proposal
    assert any("idea was proposed in .prd by hand and adopted" in n for n in status(agent)["notices"])
    agent.json("gate", "restore")
    assert [i["id"] for i in json.loads((agent.repo / ".prd").read_text())] == ["w1", "idea"]


def test_complete_waits_until_the_edit_is_reverted(agent):
    repo = agent.repo
    agent.to_verify()

    honest = (repo / ".plugkit" / "state.json").read_bytes()
    shell(agent, "sed -i 's/\"plan_passes\": [0-9]*/\"plan_passes\": 7/' .plugkit/state.json")
    held = agent.plugkit("gate", "advance", "COMPLETE", ok=False)
    assert "views_untampered" in held.stdout and "plan_passes says 7" in held.stdout
    (repo / ".plugkit" / "state.json").write_bytes(honest)
    agent.plugkit("gate", "advance", "COMPLETE")
    assert status(agent)["phase"] == "COMPLETE" and agent.stop() == (False, "")

    # Tampered after COMPLETE: Stop is blocked again until it is put right.
    shell(agent, "sed -i 's/\"plan_passes\": [0-9]*/\"plan_passes\": 7/' .plugkit/state.json")
    blocked, reason = agent.stop()
    assert blocked and "tampered" in reason
    agent.plugkit("gate", "restore")
    assert agent.stop() == (False, "")


def test_deleting_the_views_does_not_silence_the_gates(home, tmp_path):
    repo = make_repo(tmp_path / "plain", "")  # no settings: opted in by its first gate write
    (repo / ".plugkit" / "config.toml").unlink()
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    agent.plugkit("mutable", "add", "port")
    agent.plugkit("prd", "add", "the work")
    assert "plugkit gates (advisory): phase PLAN" in context(agent)
    (repo / ".prd").unlink()
    (repo / ".plugkit" / "state.json").unlink()
    assert "plugkit gates (advisory): phase PLAN" in context(agent)  # the ledger remembers
    blocked, note = agent.stop()
    assert not blocked and "open work items: w1" in note and "unknown mutables: port" in note
