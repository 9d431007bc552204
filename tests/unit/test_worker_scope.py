"""What a sandboxed worker's capability may call (runner/rpc/scope.py), and the registry that
mints and revokes it (plugkit/work/capabilities.py): pure logic, no runner."""

from plugkit.work.capabilities import Capabilities, Capability
from runner.rpc import scope
from runner.rpc.namespaces import NAMESPACES, build_methods

CAP = Capability(run="r1", item="w1", session_id="plugkit-work-r1-w1-1", worktree="/repo/.plugkit/worktrees/w1")
HERE = {"session_id": "s", "cwd": "/repo/.plugkit/worktrees/w1/src"}


def test_its_hooks_and_tasks_in_its_worktree_are_allowed():
    for name in ("hook.pre_tool", "hook.stop", "task.exec", "task.output", "prd.list", "gate.status"):
        assert scope.why_refused(CAP, name, HERE) is None, name
    assert scope.why_refused(CAP, "prd.update", {**HERE, "id": "w1"}) is None


def test_another_item_another_place_and_a_persons_methods_are_refused():
    assert "not its own item" in scope.why_refused(CAP, "prd.update", {**HERE, "id": "w2"})
    assert "outside its worktree" in scope.why_refused(CAP, "task.list", {"session_id": "p", "cwd": "/repo"})
    # A sibling whose name starts with the worktree's is not inside it.
    assert scope.why_refused(CAP, "task.list", {"session_id": "p", "cwd": "/repo/.plugkit/worktrees/w10"})
    assert scope.why_refused(CAP, "task.list", {"session_id": "p"})  # no cwd: refused
    assert "end with it" in scope.why_refused(CAP, "task.exec", {**HERE, "detach": True})
    for name in ("approval.grant", "gate.confirm_config", "gate.advance", "prd.add", "work.stop", "gate.verify",
                 "prd.verify",
                 "runner.shutdown", "debug.snapshot", "port.kill", "memory.add", "no.such_method"):
        assert "not a worker's" in scope.why_refused(CAP, name, HERE), name


def test_the_table_names_only_methods_the_runner_has():
    methods = build_methods()
    for prefix in NAMESPACES:
        methods.load(prefix)
    named = scope.IN_WORKTREE | set(scope.OWN_ITEM)
    assert named <= set(methods), named - set(methods)  # no row names a method that does not exist


def test_a_capability_is_found_by_its_token_until_revoked():
    caps = Capabilities()
    token = caps.mint(CAP)
    assert token.startswith("pkw_") and caps.lookup(token) == CAP
    assert caps.lookup(token[:-1] + "x") is None and caps.lookup("the-runners-token") is None
    caps.revoke(token)
    assert caps.lookup(token) is None and len(caps) == 0
