"""Shortcuts an agent that wants to skip the work would take, performed for real against the
runner in a git repository with gates = "enforce": each ends refused or reported `tampered`,
never accepted (issue 20). Receipts and the task environment here; approvals and the
workspace's views in their own files."""

import json
import os

import pytest

from plugkit.lifecycle import evidence
from plugkit.lifecycle.workspace import Workspace
from tests.support.agent import Agent, make_repo

pytestmark = pytest.mark.e2e


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo", 'gates = "enforce"\nverify = "true"\n')


def forge(repo, task_id: int, output: bytes, session: str = "agent-1", key: bytes | None = None) -> str:
    """What the issue's agent wrote by hand: a blob and a JSON receipt whose id is its own
    hash, for a task that finished green (sealed too when it got hold of the key). Returns its id."""
    ws = Workspace(os.path.realpath(repo), seal=key)  # plugkit's own model, as any local process can import it
    witness = evidence.TaskWitness(task_id=task_id, session_id=session, lang="bash", code_sha256=None,
                                   state="completed", exit_code=0, truncated=False)
    return evidence.record_output(ws, "task_output", output, witness, "w1", "tests passed", 1.0).id


def test_a_hand_written_receipt_fails_verify_and_completes_nothing(home, repo):
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    agent.plugkit("prd", "add", "the work", "--acceptance", "done")
    agent.plugkit("prd", "update", "w1", "--status", "in_progress")

    ran, _ = agent.exec_task("echo building")
    forged = {task_id: forge(repo, task_id, b"all 120 tests passed\n") for task_id in (999, ran)}
    for task_id, rid in forged.items():  # a task that never ran; one that did, described falsely
        checked = json.loads(agent.plugkit("evidence", "verify", rid[:8], "--json", ok=False).stdout)
        assert not checked["ok"] and "no valid seal" in checked["results"][0]["problems"][0], task_id
    everything = json.loads(agent.plugkit("evidence", "verify", "--json", ok=False).stdout)
    assert {r["id"] for r in everything["results"] if not r["ok"]} == set(forged.values())

    rid = forged[999]
    refused = agent.plugkit("prd", "update", "w1", "--status", "completed", "--evidence", rid, ok=False)
    assert "does not verify" in refused.stderr and "no valid seal" in refused.stderr
    assert agent.json("prd", "list")["items"][0]["status"] == "in_progress"

    # Even sealed with the runner's own key (read from its home), a receipt for a task the
    # runner's ledger never held does not verify.
    leaked = forge(repo, 999, b"ok\n", key=(home.path / "gates.key").read_bytes())
    checked = json.loads(agent.plugkit("evidence", "verify", leaked, "--json", ok=False).stdout)
    assert checked["results"][0]["problems"] == [
        "task_999 is not in the runner's ledger: no such task ran under this runner"]

    # The honest receipt verifies, seal and ledger both.
    real = agent.json("evidence", "add", "--task", str(ran), "--subject", "w1")
    assert real["task"]["session_id"] == "agent-1"
    assert agent.json("evidence", "verify", real["id"])["ok"]


def test_a_sealed_receipt_edited_or_copied_to_another_workspace_fails(home, repo, tmp_path):
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    ran, _ = agent.exec_task("echo 3 tests failed; exit 1")
    real = agent.json("evidence", "add", "--task", str(ran))
    path = repo / ".plugkit" / "evidence" / f"{real['id']}.json"
    body = json.loads(path.read_text())

    # Edited to say the run was green, id recomputed so it still hashes to itself: the seal breaks.
    body["task"]["exit_code"] = 0
    receipt = evidence.Receipt.model_validate(body)
    receipt.id = evidence.body_id(receipt)
    (repo / ".plugkit" / "evidence" / f"{receipt.id}.json").write_text(receipt.model_dump_json())
    checked = json.loads(agent.plugkit("evidence", "verify", receipt.id, "--json", ok=False).stdout)
    assert "no valid seal" in checked["results"][0]["problems"][0]

    # Copied whole into another workspace, seal intact: it names the workspace it was made for.
    other = make_repo(tmp_path / "other", 'gates = "enforce"\n')
    (other / ".plugkit" / "evidence" / "blobs").mkdir(parents=True)
    (other / ".plugkit" / "evidence" / path.name).write_text(path.read_text())
    blob = repo / ".plugkit" / "evidence" / "blobs" / real["sha256"]
    (other / ".plugkit" / "evidence" / "blobs" / blob.name).write_bytes(blob.read_bytes())
    there = Agent(home, other, session="agent-2")
    checked = json.loads(there.plugkit("evidence", "verify", real["id"], "--json", ok=False).stdout)
    assert "made for another workspace" in " ".join(checked["results"][0]["problems"])


def test_a_task_is_handed_no_path_to_the_runner_home(home, repo):
    """The token lives in $PLUGKIT_HOME: a task names the runner and itself by id only."""
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    _, reason = agent.exec_task('env; echo "argv0=$0"; cat /proc/$$/cmdline | tr "\\0" " "')
    assert "PLUGKIT_TASK_ID=" in reason and "PLUGKIT_RUNNER_ID=" in reason
    assert "PLUGKIT_HOME=" not in reason and str(home.path) not in reason
    assert (home.path / "token").exists()  # the token is where it always was


def test_a_witness_from_another_session_counts_only_in_the_same_workspace_and_names_both(home, repo, tmp_path):
    first, second = Agent(home, repo, session="agent-1"), Agent(home, repo, session="agent-2")
    first.hook("SessionStart", source="startup")
    ran, _ = first.exec_task("echo port=5432")
    receipt = second.json("evidence", "add", "--task", str(ran), "--subject", "w1")
    assert (receipt["task"]["session_id"], receipt["task"]["by_session"]) == ("agent-1", "agent-2")
    assert second.json("evidence", "verify", receipt["id"])["ok"]
    second.plugkit("mutable", "add", "port")
    resolved = second.json("mutable", "resolve", "port", str(ran), "--regex", "port=(\\d+)")
    assert resolved["known"] and second.json("evidence", "show", resolved["receipt"])["task"]["by_session"] == "agent-2"

    # A session of another workspace gets the answer an unknown id gets.
    other = make_repo(tmp_path / "other", 'gates = "enforce"\n')
    refused = Agent(home, other, session="agent-3").plugkit("evidence", "add", "--task", str(ran), ok=False)
    assert f"no task_{ran} ran in this workspace" in refused.stderr
