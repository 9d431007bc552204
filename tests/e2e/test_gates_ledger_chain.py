"""A ledger that shows tampering (issue 44, item 2): the gate store's receipts, approvals, settings
and phase moves are hash-chained. Rows of $PLUGKIT_HOME/gates.sqlite3 edited or removed with
sqlite3 while the runner runs are named by `plugkit audit verify`, shown as tampered by gate
status, and hold VERIFY -> COMPLETE until a person at their own terminal acknowledges them."""

import json
import sqlite3

import pytest

from tests.support.agent import Agent, make_repo
from tests.support.person import person_cli

pytestmark = pytest.mark.e2e


@pytest.fixture
def agent(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "enforce"\nverify = "true"\n')
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    return agent


def audit(agent: Agent, ok: bool = True) -> dict:
    return json.loads(agent.plugkit("audit", "verify", "--json", ok=ok).stdout)


def edit(home, sql: str, *args) -> None:
    with sqlite3.connect(home.path / "gates.sqlite3") as db:
        assert db.execute(sql, args).rowcount == 1, sql


def test_an_edited_ledger_row_is_named_and_holds_complete_until_a_person_acknowledges(agent, home):
    repo = agent.repo
    ran, _ = agent.exec_task("echo 3 tests failed; exit 1")
    rid = agent.json("evidence", "add", "--task", str(ran))["id"]
    clean = audit(agent)
    assert clean["ok"] and clean["records"] >= 2 and clean["sealed_at"]

    # The receipt's record rewritten to name another task, as someone with sqlite3 would.
    with sqlite3.connect(home.path / "gates.sqlite3") as db:
        seq = db.execute("SELECT seq FROM chain WHERE kind = 'receipt' AND body LIKE ?", (f"%{rid}%",)).fetchone()[0]
    edit(home, "UPDATE chain SET body = replace(body, ?, ?) WHERE seq = ?",
         f'"task_id":{ran}', '"task_id":999', seq)
    broken = audit(agent, ok=False)
    assert not broken["ok"] and broken["breaks"][0]["seq"] == seq
    assert f"ledger record {seq} (receipt" in broken["breaks"][0]["text"] and "edited" in broken["breaks"][0]["text"]
    shown = agent.plugkit("audit", "verify", ok=False).stdout
    assert f"first break at record {seq}" in shown and "plugkit audit ack" in shown
    assert any(f"ledger record {seq}" in t for t in agent.json("gate", "status")["tampered"])

    agent.to_verify()
    held = agent.plugkit("gate", "advance", "COMPLETE", ok=False)
    assert "views_untampered" in held.stdout and f"ledger record {seq}" in held.stdout

    # The agent cannot acknowledge it; a person at their own terminal can.
    refused = agent.plugkit("audit", "ack", ok=False)
    assert "acknowledgement refused" in refused.stderr
    done = person_cli(home, "audit", "ack", "--cwd", str(repo))
    assert done.returncode == 0 and f"ledger record {seq}" in done.stdout, done.stdout
    after = audit(agent)
    assert after["ok"] and after["breaks"][0]["acknowledged"]
    agent.plugkit("gate", "advance", "COMPLETE")
    assert agent.phase() == "COMPLETE"


def test_a_removed_record_and_a_table_row_edited_around_the_chain_are_named(agent, home):
    for code in ("echo one", "echo two", "echo three"):
        ran, _ = agent.exec_task(code)
        agent.json("evidence", "add", "--task", str(ran))
    agent.hook("SessionEnd", reason="exit")  # the head is signed as a session ends
    with sqlite3.connect(home.path / "gates.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM chain_seals WHERE why = 'session ended'").fetchone()[0] == 1
    assert audit(agent)["ok"]
    with sqlite3.connect(home.path / "gates.sqlite3") as db:
        seqs = [s for (s,) in db.execute("SELECT seq FROM chain WHERE kind = 'receipt' ORDER BY seq")]
        rid = db.execute("SELECT id FROM receipts ORDER BY created_at LIMIT 1").fetchone()[0]
    edit(home, "DELETE FROM chain WHERE seq = ?", seqs[1])
    first = audit(agent, ok=False)["breaks"][0]
    assert first["seq"] == seqs[1] + 1 and "no longer follows its predecessor" in first["text"]

    edit(home, "UPDATE receipts SET task_id = 999 WHERE id = ?", rid)
    texts = [b["text"] for b in audit(agent, ok=False)["breaks"]]
    assert any(f"receipts row {rid}" in t and "matches no ledger record" in t for t in texts), texts
