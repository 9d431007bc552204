"""The phase machine: every forward row (each condition failing, then all holding) and every trigger."""

import hashlib
import os
from pathlib import Path

import pytest

from plugkit.lifecycle import errors, gating, item_ops, phases, state as state_mod
from plugkit.lifecycle.config import GateConfig
from plugkit.lifecycle.evidence import TaskWitness
from plugkit.lifecycle.gating import External, Witnessed
from plugkit.lifecycle.mutables import Witness
from plugkit.lifecycle.phases import GitFacts
from plugkit.lifecycle.state import VerifyRun
from plugkit.lifecycle.workspace import Workspace

CFG = GateConfig(verify="true")
CLEAN = External()
NOW = 1000.0


@pytest.fixture
def ws(tmp_path):
    return Workspace(os.path.realpath(tmp_path))


def put(ws, phase, **fields):
    with state_mod.transaction(ws) as st:
        st.phase = phase
        for k, v in fields.items():
            setattr(st, k, v)


def seen(task_id=1, output="42\n", state="completed", exit_code=0):
    return Witnessed(Witness(task_id, state, exit_code, output, False),
                     TaskWitness(task_id=task_id, session_id="s", lang="bash", code_sha256="0" * 64,
                                 state=state, exit_code=exit_code, truncated=False))


def unmet(result):
    return {c.name: c.value for c in result.checks if not c.holds}


def test_tables_name_every_row_and_condition():
    assert [(r.source, r.target) for r in phases.FORWARD] == [
        ("PLAN", "EXECUTE"), ("EXECUTE", "EMIT"), ("EMIT", "VERIFY"), ("VERIFY", "COMPLETE"), ("COMPLETE", "PLAN")]
    for row in phases.FORWARD:
        assert row.conditions and all(c in phases.CONDITIONS for c in row.conditions)
    assert set(phases.BACKWARD) == {"new_unknown", "unresolved_after_two_attempts", "verify_failed_code",
                                    "verify_failed_emit", "replan"}


def test_plan_to_execute_needs_a_declared_pass_that_added_nothing(ws):
    gating.add_mutable(ws, "db_port", None, "", NOW)
    item_ops.prd_add(ws, {"subject": "login"}, NOW)
    first = gating.advance(ws, CFG, CLEAN, "EXECUTE", NOW)
    assert not first.ok and unmet(first) == {"last_pass_added_nothing": ["mutable db_port", "item w1"]}
    second = gating.advance(ws, CFG, CLEAN, None, NOW + 1)
    assert second.ok and second.state.phase == "EXECUTE"
    entry = state_mod.load(ws).history[-1]
    assert (entry.from_phase, entry.to_phase, entry.trigger, entry.at) == ("PLAN", "EXECUTE", "plan_settled", NOW + 1)
    assert entry.conditions == {"plan_pass_declared": 2, "last_pass_added_nothing": []}


def test_status_in_plan_previews_what_the_advance_would_find(ws):
    def preview():
        return {c.name: (c.holds, c.value) for c in gating.next_checks(ws, state_mod.load(ws), CFG, CLEAN)}

    gating.add_mutable(ws, "db_port", None, "", NOW)
    assert preview() == {"plan_pass_declared": (True, 1), "last_pass_added_nothing": (False, ["mutable db_port"])}
    gating.advance(ws, CFG, CLEAN, None, NOW)
    assert preview() == {"plan_pass_declared": (True, 2), "last_pass_added_nothing": (True, [])}
    assert state_mod.load(ws).plan_passes == 1  # a preview declares nothing


def test_advance_refuses_skipping_a_phase(ws):
    with pytest.raises(errors.Conflict, match="next phase is EXECUTE"):
        gating.advance(ws, CFG, CLEAN, "EMIT", NOW)


def test_execute_to_emit_needs_every_mutable_known(ws):
    put(ws, "EXECUTE")
    gating.add_mutable(ws, "port", None, "", NOW)  # outside PLAN: back to PLAN
    put(ws, "EXECUTE")
    refused = gating.advance(ws, CFG, CLEAN, None, NOW)
    assert unmet(refused) == {"all_mutables_known": ["port"]}
    gating.resolve_mutable(ws, "port", seen(), None, None, NOW)
    assert gating.advance(ws, CFG, CLEAN, None, NOW).state.phase == "EMIT"


def test_emit_to_verify_needs_declared_files_matching_on_disk(ws):
    put(ws, "EMIT")
    assert unmet(gating.advance(ws, CFG, CLEAN, None, NOW)) == {"emission_declared": None,
                                                                "emitted_files_match": []}
    content = b"print('hi')\n"
    gating.declare_emission(ws, [("app.py", hashlib.sha256(content).hexdigest())])
    assert unmet(gating.advance(ws, CFG, CLEAN, None, NOW)) == {"emitted_files_match": ["app.py: missing"]}
    target = Path(ws.root, "app.py")
    target.write_bytes(b"something else")
    assert "differs" in unmet(gating.advance(ws, CFG, CLEAN, None, NOW))["emitted_files_match"][0]
    target.write_bytes(content)
    assert gating.advance(ws, CFG, CLEAN, None, NOW).state.phase == "VERIFY"


def test_emission_is_declared_only_before_verify_and_inside_the_workspace(ws):
    with pytest.raises(errors.Conflict, match="EXECUTE or EMIT"):
        gating.declare_emission(ws, [("a", "0" * 64)])
    put(ws, "EMIT")
    with pytest.raises(errors.Invalid, match="outside the workspace"):
        gating.declare_emission(ws, [("../escape.py", "0" * 64)])


def green_verify(ws, head=None):
    gating.record_verify_start(ws, VerifyRun(task_id=9, session_id="s", started_at=NOW, head=head))
    gating.settle_verify(ws, seen(task_id=9, output="ok"), NOW)


def test_verify_to_complete_names_each_unmet_condition(ws):
    put(ws, "VERIFY")
    item_ops.prd_add(ws, {"subject": "open one"}, NOW)
    with state_mod.transaction(ws) as st:
        st.mutables["m"] = gating.mutables.Mutable(name="m")
    ext = External(running_tasks=(7,), git=GitFacts(repo=True, dirty=("a.py",), upstream="origin/main",
                                                     ahead=2, head="abc"))
    result = gating.advance(ws, CFG, ext, None, NOW)
    assert unmet(result) == {
        "no_open_work_items": ["w1"], "no_unknown_mutables": ["m"], "no_running_tasks": ["task_7"],
        "git_clean": ["a.py"], "nothing_unpushed": "2 commit(s) ahead of origin/main",
        "verify_green": "not run in this VERIFY phase: plugkit gate verify"}
    assert result.state.phase == "VERIFY"


@pytest.mark.parametrize("cfg,setup,note", [
    (GateConfig(), None, "no verify command"),
    (CFG, "running", "running: task_9"),
    (CFG, "red", "red: task_9 ended failed (exit code 1)"),
    (CFG, "stale", "stale: HEAD moved"),
])
def test_verify_green_requires_a_fresh_green_run_at_head(ws, cfg, setup, note):
    put(ws, "VERIFY")
    if setup:
        gating.record_verify_start(ws, VerifyRun(task_id=9, session_id="s", started_at=NOW,
                                                 head="old" if setup == "stale" else "abc"))
    if setup == "red":
        gating.settle_verify(ws, seen(task_id=9, state="failed", exit_code=1), NOW)
    if setup == "stale":
        gating.settle_verify(ws, seen(task_id=9), NOW)
    result = gating.advance(ws, cfg, External(git=GitFacts(repo=True, head="abc")), None, NOW)
    assert unmet(result)["verify_green"].startswith(note)


def test_verify_to_complete_when_everything_holds(ws):
    put(ws, "VERIFY")
    green_verify(ws, head="abc")
    result = gating.advance(ws, CFG, External(git=GitFacts(repo=True, head="abc")), "COMPLETE", NOW)
    assert result.ok and result.state.phase == "COMPLETE"
    assert result.transition.conditions["git_clean"] == []
    assert result.transition.conditions["verify_green"].startswith("green: task_9")


def test_a_verify_run_from_before_entering_verify_does_not_count(ws):
    put(ws, "EMIT", emission=[])
    gating.record_verify_start(ws, VerifyRun(task_id=9, session_id="s", started_at=NOW))
    assert state_mod.load(ws).verify is None  # not in VERIFY: not recorded at all
    gating.advance(ws, CFG, CLEAN, None, NOW)
    assert state_mod.load(ws).phase == "VERIFY" and state_mod.load(ws).verify is None


def test_new_work_reopens_a_complete_workspace(ws):
    put(ws, "COMPLETE")
    refused = gating.advance(ws, CFG, CLEAN, None, NOW)
    assert unmet(refused) == {"new_work_arrived": []}
    item, moved = item_ops.prd_add(ws, {"subject": "next feature"}, NOW)
    assert moved.trigger == "new_work" and moved.to_phase == "PLAN"
    assert moved.conditions == {"new_work_arrived": ["item w1"]}


@pytest.mark.parametrize("phase", ["EXECUTE", "EMIT", "VERIFY", "COMPLETE"])
def test_a_new_unknown_in_any_later_phase_goes_back_to_plan(ws, phase):
    put(ws, phase)
    _m, st, moved = gating.add_mutable(ws, "surprise", None, "", NOW)
    assert st.phase == "PLAN" and moved.trigger == "new_unknown" and moved.from_phase == phase
    assert st.plan_added == ["mutable surprise"]  # the next pass must account for it


@pytest.mark.parametrize("trigger,source,target", [
    ("new_unknown", "EMIT", "PLAN"), ("replan", "COMPLETE", "PLAN"),
    ("verify_failed_code", "VERIFY", "EXECUTE"), ("verify_failed_emit", "VERIFY", "EMIT"),
])
def test_agent_triggers_move_back_and_are_recorded(ws, trigger, source, target):
    put(ws, source)
    moved = gating.retreat(ws, trigger, "tests fail", NOW)
    st = state_mod.load(ws)
    assert st.phase == target and (moved.trigger, moved.reason) == (trigger, "tests fail")
    assert st.history[-1].from_phase == source


def test_retreat_refusals(ws):
    with pytest.raises(errors.Conflict, match="does not apply in PLAN"):
        gating.retreat(ws, "replan", "x", NOW)
    put(ws, "EXECUTE")
    with pytest.raises(errors.Conflict, match="applies in VERIFY"):
        gating.retreat(ws, "verify_failed_code", "x", NOW)
    with pytest.raises(errors.Forbidden):
        gating.retreat(ws, "unresolved_after_two_attempts", "x", NOW)
    with pytest.raises(errors.Invalid, match="unknown trigger"):
        gating.retreat(ws, "because", "x", NOW)


def test_two_failed_witnessed_attempts_send_the_workspace_back_to_plan(ws):
    put(ws, "EXECUTE")
    with state_mod.transaction(ws) as st:
        st.mutables["ver"] = gating.mutables.Mutable(name="ver", expected="3.11")
    first = gating.resolve_mutable(ws, "ver", seen(output="3.10\n"), None, None, NOW)
    assert first.outcome.failed and first.transition is None and first.state.phase == "EXECUTE"
    second = gating.resolve_mutable(ws, "ver", seen(task_id=2, output="oops", exit_code=1, state="failed"),
                                    None, None, NOW)
    assert second.transition.trigger == "unresolved_after_two_attempts"
    assert second.state.phase == "PLAN" and second.mutable.attempts == 0
    assert second.transition.conditions == {"attempts": 2}


def test_entering_plan_clears_what_later_phases_witnessed(ws):
    put(ws, "VERIFY", emission=[], plan_passes=3)
    green_verify(ws)
    gating.retreat(ws, "replan", "scope changed", NOW)
    st = state_mod.load(ws)
    assert (st.plan_passes, st.emission, st.verify) == (0, None, None)
