"""Evidence receipts: content-addressed, and verify catches any tampering."""

import json
import os
from pathlib import Path

import pytest

from plugkit.lifecycle import errors, evidence
from plugkit.lifecycle.evidence import TaskWitness
from plugkit.lifecycle.workspace import Workspace

NOW = 1000.0
TASK = TaskWitness(task_id=4, session_id="s", lang="bash", code_sha256="c" * 64, state="completed",
                   exit_code=0, truncated=False)


@pytest.fixture
def ws(tmp_path):
    w = Workspace(os.path.realpath(tmp_path))
    w.ensure_dir()
    return w


def test_output_receipt_is_content_addressed_and_verifies(ws):
    r = evidence.record_output(ws, "task_output", b"42\n", TASK, "mutable:x", "", NOW)
    assert r.sha256 == evidence.sha256_bytes(b"42\n") and r.size == 3
    assert r.id == evidence.body_id(r) and len(r.id) == evidence.ID_CHARS
    assert Path(ws.evidence_dir, "blobs", r.sha256).read_bytes() == b"42\n"
    assert evidence.verify(ws, r, r.id) == []
    again = evidence.record_output(ws, "task_output", b"42\n", TASK, "mutable:x", "", NOW)
    assert again.id == r.id  # same content, same receipt
    assert [x.id for x in evidence.list_receipts(ws)] == [r.id]


def test_verify_catches_an_edited_receipt(ws):
    r = evidence.record_output(ws, "verify", b"ok", TASK, "verify", "", NOW)
    path = Path(ws.evidence_dir, r.id + ".json")
    body = json.loads(path.read_text())
    body["task"]["exit_code"] = 1 if body["task"]["exit_code"] == 0 else 0
    path.write_text(json.dumps(body))
    assert [(i, p) for i, _r, p in evidence.verify_all(ws, [])] == [(r.id, ["the receipt was edited after it was written "
                                                   "(its content no longer hashes to its id)"])]


def test_verify_catches_an_altered_or_missing_output_copy(ws):
    r = evidence.record_output(ws, "task_output", b"tests passed", TASK, "", "", NOW)
    blob = Path(ws.evidence_dir, "blobs", r.sha256)
    blob.write_bytes(b"tests passed!")
    assert [(i, p) for i, _r, p in evidence.verify_all(ws, [r.id[:6]])] == [(r.id, ["the witnessed output copy was altered"])]
    blob.unlink()
    assert evidence.verify(ws, r) == ["the witnessed output copy is missing"]


def test_file_receipts_notice_later_changes(ws):
    Path(ws.root, "shot.png").write_bytes(b"\x89PNG...")
    r = evidence.record_file(ws, os.path.join(ws.root, "shot.png"), "w1", "login page", NOW)
    assert (r.kind, r.path) == ("file", "shot.png")
    assert evidence.verify(ws, r) == []
    Path(ws.root, "shot.png").write_bytes(b"other")
    assert evidence.verify(ws, r) == ["shot.png changed since it was recorded"]
    Path(ws.root, "shot.png").unlink()
    assert evidence.verify(ws, r) == ["shot.png is gone"]


def test_file_receipts_stay_inside_the_workspace(ws, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere") / "secret"
    outside.write_text("x")
    os.symlink(outside, os.path.join(ws.root, "link"))
    for path in (str(outside), "../secret", "link"):
        with pytest.raises(errors.Invalid, match="outside the workspace"):
            evidence.record_file(ws, path, "", "", NOW)
    with pytest.raises(errors.Invalid, match="not a file"):
        evidence.record_file(ws, ".plugkit", "", "", NOW)


def test_find_by_prefix(ws):
    r = evidence.record_output(ws, "task_output", b"a", TASK, "", "", NOW)
    assert evidence.find(ws, r.id[:6].upper()).id == r.id
    with pytest.raises(errors.Invalid, match="at least 6"):
        evidence.find(ws, "abc")
    with pytest.raises(errors.NotFound):
        evidence.find(ws, "ffffffffff")


def test_an_unreadable_receipt_is_reported_by_verify_all(ws):
    os.makedirs(ws.evidence_dir)
    Path(ws.evidence_dir, "0123456789abcdef0123.json").write_text("{not json")
    assert evidence.verify_all(ws, []) == [("0123456789abcdef0123", None, ["the receipt is not valid JSON of a receipt"])]
    assert evidence.list_receipts(ws) == []
