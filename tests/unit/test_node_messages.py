"""Every message between the runner, its Ray driver and the node task is a model that refuses what
does not fit it (plugkit/protocol/node.py): an unknown field, a field of the wrong kind, an event
of the old tuple shape. Each receiver checks before it acts, and says which message and field."""

import inspect
import json
import os
import typing

import pytest

from plugkit.protocol import node as msg
from plugkit.protocol.work_host import WorkRead, WorkRunning
from runner.node import auth, driver, placing, task

SHA = "a" * 40
ATTEMPT = dict(repo_key="/w/repo", branch="plugkit/w1", local_worktree="/w/repo-wt", argv=["claude", "-p"],
               stdin="do it", env={"PATH": "/usr/bin"}, session="plugkit-work-r1-w1-1", run="r1", item="w1",
               attempt=1, sandbox=True, network="host", kind="command", install=None, hooks_file=None)

# (the message, one valid instance's data, a field and a value of the wrong kind for it)
SAMPLES = {
    msg.DriverSpec: ({**ATTEMPT, "cluster": "127.0.0.1:6379", "record": "/h/work/ray/r1-w1-1.record.json",
                      "gateway": "/h/work/ray/gw-0123456789ab.sock"},
                     "record", "relative/path"),
    msg.NodeAttempt: ({**ATTEMPT, "base": SHA, "identity": {"name": "A", "email": "a@b"}}, "base", "HEAD"),
    msg.Identity: ({"name": "A", "email": "a@b"}, "name", ["A"]),
    msg.Record: ({"ray_task": "ff01", "node": "n" * 56, "node_ip": "10.0.0.2", "node_dir": "/n", "beats": 3,
                  "refused": ["git push"], "refused_nodes": {"n2 (10.0.0.3)": "no key"}, "bad_objects": None},
                 "beats", -1),
    msg.At: ({"kind": "node", "node": "n" * 56, "ip": "10.0.0.2", "dir": "/n", "pid": 4242}, "node", ""),
    msg.Out: ({"kind": "out", "data": b"hello\n"}, "data", 5),
    msg.Beat: ({"kind": "beat", "beats": 4}, "beats", "many"),
    msg.Refused: ({"kind": "refused", "calls": ["rm -rf /"]}, "calls", "rm -rf /"),
    msg.Lost: ({"kind": "lost", "why": "its runner restarted"}, "why", None),
    msg.BadObjects: ({"kind": "bad_objects", "why": "a forged tree"}, "why", None),
    msg.Done: ({"kind": "done", "rc": 0, "bundle": b"# v2 git bundle\n"}, "rc", "zero"),
    msg.Proof: ({"uid": 1000, "answer": "b" * 64}, "answer", "not hex"),
    msg.NodeFacts: ({"plugkit": "1.0", "python": "3.11.7", "git": True, "dir": "/n", "at": 1.0,
                     "hosts": {"claude-code": "2.0"}, "proof": {"uid": 1000, "why": "no key"}}, "git", "maybe"),
}


def test_every_message_has_a_sample_here():
    messages = {c for _, c in inspect.getmembers(msg, inspect.isclass)
                if issubclass(c, msg.Message) and c not in (msg.Message, msg.Attempt)}
    assert messages == set(SAMPLES), "a message without a refusal test: add its sample to SAMPLES"


@pytest.mark.parametrize("model", list(SAMPLES), ids=[m.__name__ for m in SAMPLES])
def test_a_message_with_an_unknown_field_is_refused_naming_it(model):
    good, _, _ = SAMPLES[model]
    assert msg.parse(model, good, "message") == model.model_validate(good)
    with pytest.raises(msg.Malformed, match=r"^a malformed message \(smuggled: Extra inputs are not permitted\)"):
        msg.parse(model, {**good, "smuggled": 1}, "message")


@pytest.mark.parametrize("model", list(SAMPLES), ids=[m.__name__ for m in SAMPLES])
def test_a_message_with_a_field_of_the_wrong_kind_is_refused_naming_it(model):
    good, field, bad = SAMPLES[model]
    with pytest.raises(msg.Malformed) as caught:
        msg.parse(model, {**good, field: bad}, "message")
    said = str(caught.value)
    assert said.startswith(f"a malformed message ({field}") and "plugkit doctor" in said and "\n" not in said


def test_the_node_tasks_events_are_told_apart_by_kind_and_the_old_tuples_are_refused():
    events = typing.get_args(typing.get_args(msg.NodeEvent)[0])
    assert len(events) == 7
    for model in events:
        assert type(msg.event(SAMPLES[model][0])) is model
    for raw in [("out", b"x"), {"kind": "output", "data": b"x"}, {"data": b"x"}, {"kind": "done", "rc": 0, "x": 1}]:
        with pytest.raises(msg.Malformed, match="^a malformed event from the node"):
            msg.event(raw)


def test_a_nodes_list_of_commits_must_be_object_names():
    assert msg.parse(msg.Have, [SHA], "list") == [SHA]
    with pytest.raises(msg.Malformed, match=r"^a malformed list \(0: String should match pattern"):
        msg.parse(msg.Have, ["--upload-pack=evil"], "list")


def test_the_node_runners_answers_are_checked_as_its_wire_models():
    assert msg.parse(WorkRead, {"task_id": 3, "cursor": 9, "beats": 2, "data": "hi"}, "answer").beats == 2
    for model, bad in [(WorkRead, {"task_id": 3, "cursor": 9, "later": 1}), (WorkRunning, {"relay": None})]:
        with pytest.raises(msg.Malformed, match="^a malformed answer"):
            msg.parse(model, bad, "answer")


def test_the_gateway_refuses_a_malformed_spec_before_reaching_any_cluster_and_leaves_no_spec(tmp_path):
    good, _, _ = SAMPLES[msg.DriverSpec]
    path = tmp_path / "a.spec.json"
    path.write_text(json.dumps({**good, "base": None}))  # the shape before the model: base filled by the gateway
    with pytest.raises(msg.Malformed, match=r"^a malformed spec from the runner \(base: Extra inputs"):
        placing.read_spec(str(path))
    assert not path.exists()  # it held the worker's scoped environment


def test_the_driver_refuses_a_spec_naming_no_gateway_and_leaves_no_spec(tmp_path, capfdbinary):
    path = tmp_path / "a.spec.json"
    path.write_text(json.dumps({"cluster": "127.0.0.1:6379", "gateway": "relative.sock"}))
    assert driver.main([str(path)]) == msg.CLUSTER_RC
    said = capfdbinary.readouterr().out.decode()
    assert said.startswith("[plugkit ray] a malformed spec from the runner"), said
    assert not path.exists()


def test_the_node_task_refuses_a_malformed_attempt_before_it_makes_anything(tmp_path, monkeypatch):
    monkeypatch.setenv("PLUGKIT_NODE_DIR", str(tmp_path / "node"))
    good, _, _ = SAMPLES[msg.NodeAttempt]
    steps = task.attempt(None, {**good, "argv": []}, "node-1", "127.0.0.1")
    with pytest.raises(msg.Malformed, match=r"^a malformed attempt from the driver \(argv: List should have at least"):
        next(steps)
    assert not os.path.exists(tmp_path / "node")


def test_a_proof_of_another_shape_proves_nothing():
    proof = {"uid": 1000, "answer": auth.answer(b"k", "c", "node-a")}
    assert auth.verdict(b"k", "c", "node-a", proof) is None
    assert auth.verdict(b"k", "c", "node-a", {**proof, "uid": "root"}).startswith("a malformed answer to the node-key")


def test_the_drivers_exit_codes_are_the_protocols():
    # The driver imports no pydantic (it runs once per attempt): its copies of the codes must agree.
    assert (driver.NODE_LOST_RC, driver.CLUSTER_RC) == (msg.NODE_LOST_RC, msg.CLUSTER_RC)
