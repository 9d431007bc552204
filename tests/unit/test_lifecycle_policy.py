"""The hooks' answers: PreToolUse decisions per tool, phase and mode; Stop; session context."""

import os
import time
from pathlib import Path

import pytest

from plugkit.lifecycle import gating, hook_policy as policy, hooks, item_ops, state as state_mod
from plugkit.lifecycle.config import GateConfig
from plugkit.lifecycle.gating import External
from plugkit.lifecycle.mutables import Mutable
from plugkit.lifecycle.phases import GitFacts
from plugkit.lifecycle.workspace import Workspace

ENFORCE = GateConfig(mode="enforce", verify="true")


def decide(phase, tool, tool_input, unknown=("db_port",)):
    return policy.decide(policy.view(phase, list(unknown), tool, tool_input))


@pytest.mark.parametrize("tool,tool_input", [
    ("Write", {"file_path": "/w/a.py", "content": "x"}), ("Edit", {"file_path": "a.py"}),
    ("MultiEdit", {"file_path": "a.py"}), ("NotebookEdit", {"notebook_path": "n.ipynb"}),
    ("write_file", {"file_path": "a.py"}), ("replace", {"file_path": "a.py"}),
    ("apply_patch", {"input": "*** Begin Patch\n*** Update File: a.py\n"}),
])
@pytest.mark.parametrize("phase,decision", [("PLAN", "deny"), ("EXECUTE", "deny"), ("EMIT", "allow"),
                                            ("VERIFY", "allow"), ("COMPLETE", "deny")])
def test_file_writes_by_phase_on_every_platform(tool, tool_input, phase, decision):
    assert decide(phase, tool, tool_input, unknown=()).decision == decision


def test_write_denials_name_the_unknowns_or_the_phase():
    assert "unknown mutables: db_port" in decide("EXECUTE", "Write", {"file_path": "a"}).reason
    assert decide("PLAN", "Write", {"file_path": "a"}, unknown=()).reason.startswith("phase PLAN:")
    assert "COMPLETE" in decide("COMPLETE", "Edit", {"file_path": "a"}).reason


@pytest.mark.parametrize("command,decision", [
    ("git commit -m wip", "deny"), ("cd x && git push origin main", "deny"), ("git -C repo commit -a", "deny"),
    ("git --no-pager log --grep commit", "allow"), ("git status", "allow"), ("echo digit push", "allow"),
    ("exec:bash git commit -m x", "allow"), ("plugkit exec:python 'print(1)'", "allow"),
    ("plugkit approve w7", "ask"), ("ls; plugkit approve w7", "ask"),
    ("/usr/bin/git commit -m x", "deny"), ("./.venv/bin/plugkit approve w7", "ask"),
    ("plugkit approve --json --list", "allow"), ("plugkit approve --list; plugkit approve w7", "ask"),
    ("git -c git -c x=y commit", "deny"), ("git -C commit status", "allow"),
])
def test_shell_commands(command, decision):
    assert decide("EMIT", "Bash", {"command": command}).decision == decision


@pytest.mark.parametrize("command", [
    "git -c " * 20000 + "status", "plugkit approve " * 20000 + "--list", "a/" * 50000 + "git commit",
])
def test_crafted_commands_are_decided_in_linear_time(command):
    # A check that outlived the hook's 5 s budget would fail open: the call would be allowed.
    # CPU time of this process, not wall time: other load on the machine does not count, and a
    # backtracking check on these inputs would need minutes, not the 2 s allowed here.
    began = time.process_time()
    decide("EMIT", "Bash", {"command": command})
    assert time.process_time() - began < 2.0


def test_commits_are_allowed_once_nothing_is_unknown():
    assert decide("VERIFY", "Bash", {"command": "git commit -m done"}, unknown=()).decision == "allow"
    assert decide("VERIFY", "shell", {"command": ["bash", "-lc", "git push"]}).decision == "deny"


def test_lifecycle_files_are_only_changed_through_plugkit():
    for path in (".prd", "/w/.prd", "/w/.plugkit/state.json"):
        assert decide("EMIT", "Write", {"file_path": path}, unknown=()).decision == "deny"
    assert decide("EMIT", "apply_patch", {"input": "*** Add File: .plugkit/state.json\n"}, unknown=()).decision == "deny"


def test_modes_soften_the_decision():
    deny = policy.Verdict("deny", "phase PLAN: no")
    assert policy.soften("enforce", deny) == deny
    assert policy.soften("advisory", deny) == policy.Verdict(
        "allow", "plugkit gates (advisory; would deny): phase PLAN: no")
    assert policy.soften("off", deny) == policy.Verdict("allow", "")
    assert policy.soften("advisory", policy.Verdict("ask", "a person")).decision == "ask"


@pytest.fixture
def ws(tmp_path):
    return Workspace(os.path.realpath(tmp_path))


def test_check_reads_the_workspace_and_ignores_other_events(ws):
    write = ("Write", {"file_path": "a.py"})
    assert hooks.check(ws, ENFORCE, "PreToolUse", *write).decision == "deny"
    assert hooks.check(ws, ENFORCE, "PostToolUse", *write).decision == "allow"
    assert hooks.check(ws, GateConfig(mode="off"), "PreToolUse", *write).decision == "allow"
    assert not os.path.exists(ws.dir)  # a hook's read leaves nothing behind


def test_stop_lists_what_is_missing_shortest_first_and_never_loops(ws):
    gating.add_mutable(ws, "port", None, "", 1.0)
    item_ops.prd_add(ws, {"subject": "x"}, 1.0)
    ext = External(running_tasks=(3,), git=GitFacts(repo=True, dirty=("a.py",)))
    first = hooks.stop(ws, ENFORCE, ext, stop_hook_active=False)
    assert first.block and first.missing == sorted(first.missing, key=len)
    assert set(first.missing) == {"open work items: w1", "unknown mutables: port", "tasks still running: task_3",
                                  "uncommitted changes: a.py", "phase is PLAN, not COMPLETE",
                                  "verify: not run in this VERIFY phase: plugkit gate verify"}
    again = hooks.stop(ws, ENFORCE, ext, stop_hook_active=True)
    assert not again.block and again.missing == first.missing
    changed = hooks.stop(ws, ENFORCE, External(git=GitFacts(repo=True, dirty=("a.py",))), stop_hook_active=True)
    assert changed.block  # a different reason is news: block once more
    fresh_turn = hooks.stop(ws, ENFORCE, External(git=GitFacts(repo=True, dirty=("a.py",))), False)
    assert fresh_turn.block


def test_stop_in_advisory_and_off_modes_never_blocks(ws):
    advisory = hooks.stop(ws, GateConfig(verify="true"), External(), False)
    assert not advisory.block and advisory.reason.startswith("plugkit gates (advisory)")
    assert hooks.stop(ws, GateConfig(mode="off"), External(), False) == hooks.StopVerdict(False, "", [])


def test_stop_lets_a_clean_complete_workspace_stop(ws):
    with state_mod.transaction(ws) as st:
        st.phase, st.last_stop_reason = "COMPLETE", "old"
    assert hooks.stop(ws, ENFORCE, External(git=GitFacts(repo=True)), False) == hooks.StopVerdict(False, "", [])
    assert state_mod.load(ws).last_stop_reason is None
    dirty = hooks.stop(ws, ENFORCE, External(git=GitFacts(repo=True, dirty=("x",))), False)
    assert dirty.missing == ["uncommitted changes: x"]


def test_context_lines(ws):
    assert hooks.context_lines(ws)[0].startswith("plugkit gates (advisory): phase PLAN")
    with state_mod.transaction(ws) as st:
        st.mutables = {f"m{i}": Mutable(name=f"m{i}") for i in range(12)}
    for n in range(6):
        item_ops.prd_add(ws, {"subject": f"item {n} " + "long " * 20, "risk": "critical" if n < 4 else "low"}, 1.0)
    lines = hooks.context_lines(ws)
    assert len(lines) <= hooks.MAX_CONTEXT_LINES
    assert lines[1].startswith("unknown mutables (12): m0, m1") and lines[1].endswith("...")
    assert lines[2].startswith("ready now: w1 item 0") and lines[2].count(";") == 2
    assert sum("plugkit approve" in line for line in lines) == 3
    assert lines[-1].startswith("next: plan:")
    Path(ws.config_path).write_text('gates = "off"\n')
    assert hooks.context_lines(ws) == []
