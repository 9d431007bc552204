"""Lifecycle gates through the real app: witnessed resolution, advance, verify, git, hooks' questions."""

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from plugkit import errors
from runner.system import procstate
from tests.support.inproc import RpcError, call
from tests.support.gates_inproc import git, make_repo, to_verify



@pytest.fixture
async def rpc(make_client, tmp_path):
    client = await make_client()
    work = make_repo(tmp_path / "work")

    async def do(method: str, session: str = "s1", cwd: Path = work, **params):
        return await call(client, method, session_id=session, cwd=str(cwd), **params)

    async def run(code: str, session: str = "s1", cwd: Path = work, wait_ms: int = 10_000, **params) -> int:
        res = await do("task.exec", session=session, cwd=cwd, lang="bash", code=code, wait_ms=wait_ms, **params)
        return res["task"]["task_id"]

    def configure(text: str) -> None:
        (work / ".plugkit").mkdir(exist_ok=True)
        (work / ".plugkit" / "config.toml").write_text(text)
        git(work, "add", ".plugkit/config.toml")
        git(work, "commit", "-q", "-m", "config")

    do.client, do.work, do.run, do.configure = client, work, run, configure
    return do


async def refused(coro) -> RpcError:
    with pytest.raises(RpcError) as caught:
        await coro
    return caught.value



async def test_resolve_takes_the_value_from_the_witnessed_output_with_a_receipt(rpc):
    await rpc("mutable.add", name="db_port", expected="5432")
    code = "echo starting; echo port=5432 >&2"
    task_id = await rpc.run(code, session="other-session", cwd=rpc.work / "README" / "..")
    res = await rpc("mutable.resolve", name="db_port", task_id=task_id, regex=r"port=(\d+)")
    assert res["known"] and res["mutable"]["value"] == "5432" and res["mutable"]["status"] == "KNOWN"
    receipt = await rpc("evidence.show", receipt_id=res["receipt"])
    assert receipt["task"]["task_id"] == task_id and receipt["task"]["exit_code"] == 0
    assert receipt["task"]["code_sha256"] == hashlib.sha256(code.encode()).hexdigest()
    assert receipt["sha256"] == hashlib.sha256(b"starting\nport=5432\n").hexdigest()
    assert (await rpc("mutable.list"))["mutables"][0]["resolved_by"] == res["receipt"]


async def test_resolve_refuses_a_task_from_another_workspace(rpc, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    await rpc("mutable.add", name="v")
    foreign = await rpc.run("echo 1", cwd=elsewhere)
    err = await refused(rpc("mutable.resolve", name="v", task_id=foreign))
    unknown = await refused(rpc("mutable.resolve", name="v", task_id=foreign + 1000))
    assert err.code == unknown.code == errors.NOT_FOUND  # no oracle for other workspaces' ids
    assert "in this workspace" in str(err)
    sub = rpc.work / "src"
    sub.mkdir()
    inside = await rpc.run("echo 2", session="s2", cwd=sub)  # a subdirectory is the same workspace
    assert (await rpc("mutable.resolve", name="v", task_id=inside))["mutable"]["value"] == "2"


async def test_resolve_refuses_a_still_running_task(rpc):
    await rpc("mutable.add", name="v")
    task_id = await rpc.run("echo 7; sleep 30", wait_ms=200)
    err = await refused(rpc("mutable.resolve", name="v", task_id=task_id))
    assert err.code == errors.CONFLICT and "still running" in str(err)
    await rpc("task.kill", task_id=task_id)
    assert (await rpc("mutable.list"))["mutables"][0]["attempts"] == 0


async def test_two_failed_witnessed_attempts_go_back_to_plan(rpc):
    await rpc("mutable.add", name="py", expected="3.99")
    assert (await rpc("gate.advance"))["ok"] is False  # the pass that added py
    assert (await rpc("gate.advance"))["ok"]
    assert (await rpc("gate.advance"))["ok"] is False  # EXECUTE -> EMIT: py is unknown
    first = await rpc("mutable.resolve", name="py", task_id=await rpc.run("echo 3.11"))
    assert first["failed_attempt"] and first["phase"] == "EXECUTE"
    second = await rpc("mutable.resolve", name="py", task_id=await rpc.run("exit 3"))
    assert second["phase"] == "PLAN" and second["transition"]["trigger"] == "unresolved_after_two_attempts"
    status = await rpc("gate.status")
    assert status["history"][-1]["reason"].startswith("mutable py: task_")


async def test_advance_is_refused_with_the_unmet_conditions_named(rpc):
    await rpc("mutable.add", name="schema")
    first = await rpc("gate.advance", to="EXECUTE")
    assert first["ok"] is False and first["unmet"] == [
        {"name": "last_pass_added_nothing", "holds": False, "value": ["mutable schema"]}]
    assert (await rpc("gate.advance", to="EXECUTE"))["ok"]
    refused_emit = await rpc("gate.advance")
    assert refused_emit["unmet"] == [{"name": "all_mutables_known", "holds": False, "value": ["schema"]}]
    skip = await refused(rpc("gate.advance", to="COMPLETE"))
    assert skip.code == errors.CONFLICT


async def test_verify_command_is_witnessed_and_complete_needs_a_clean_pushed_tree(rpc):
    rpc.configure('gates = "enforce"\nverify = "echo verified"\n')
    await to_verify(rpc)
    before = await rpc("gate.advance")
    assert {c["name"] for c in before["unmet"]} == {"verify_green"}
    started = await rpc("gate.verify", wait_ms=10_000)
    assert started["verify"]["outcome"] == "green" and started["task"]["state"] == "completed"
    assert (await rpc("evidence.verify"))["ok"]
    (rpc.work / "app.py").write_text("print('changed')\n")
    dirty = await rpc("gate.advance", to="COMPLETE")
    assert dirty["ok"] is False and dirty["unmet"] == [{"name": "git_clean", "holds": False, "value": ["app.py"]}]
    stop = await rpc("gate.stop")
    assert stop["block"] and "uncommitted changes: app.py" in stop["missing"]
    git(rpc.work, "commit", "-q", "-am", "fix")
    stale = await rpc("gate.advance")
    assert stale["unmet"][0]["value"].startswith("stale: HEAD moved")
    await rpc("gate.verify", wait_ms=10_000)
    done = await rpc("gate.advance")
    assert done["ok"] and done["phase"] == "COMPLETE"
    assert (await rpc("gate.stop"))["block"] is False


async def test_a_red_verify_is_recorded_and_the_agent_names_the_cause(rpc):
    rpc.configure('verify = "echo 1 failed; exit 1"\n')
    err = await refused(rpc("gate.verify"))
    assert err.code == errors.CONFLICT and "phase is PLAN" in str(err)
    await to_verify(rpc)
    red = await rpc("gate.verify", wait_ms=10_000)
    assert red["verify"]["outcome"] == "red" and "exit code 1" in red["verify"]["detail"]
    back = await rpc("gate.retreat", trigger="verify_failed_code", reason="1 test fails")
    assert (back["from_phase"], back["to_phase"]) == ("VERIFY", "EXECUTE")


async def test_unpushed_commits_block_complete_when_an_upstream_exists(rpc, tmp_path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(rpc.work, "remote", "add", "origin", str(remote))
    git(rpc.work, "push", "-q", "-u", "origin", "main")
    rpc.configure('verify = "true"\n')
    await to_verify(rpc)
    await rpc("gate.verify", wait_ms=10_000)
    ahead = await rpc("gate.advance")
    assert ahead["unmet"] == [{"name": "nothing_unpushed", "holds": False,
                               "value": "2 commit(s) ahead of origin/main"}]
    git(rpc.work, "push", "-q")
    assert (await rpc("gate.advance"))["ok"]


async def test_completing_an_item_requires_evidence(rpc):
    await rpc("prd.add", subject="login form", acceptance=["rejects a bad password"], verify="echo 3 passed")
    err = await refused(rpc("prd.update", id="w1", status="completed"))
    assert err.code == errors.CONFLICT and "requires naming evidence" in str(err)
    receipt = await rpc("evidence.add", task_id=await rpc.run("echo 3 passed"), subject="w1")
    err = await refused(rpc("prd.update", id="w1", status="completed", evidence=[receipt["id"][:8]]))
    assert err.code == errors.CONFLICT and "at no known git HEAD" in str(err)  # not run as its check
    checked = await rpc("prd.verify", id="w1")
    assert checked["outcome"] == "green" and checked["head"]
    done = await rpc("prd.update", id="w1", status="completed", evidence=[checked["receipt"][:8]])
    assert done["status"] == "completed" and done["evidence"] == [checked["receipt"]]
    cycle = await refused(rpc("prd.add", id="w2", subject="x", blocked_by=["w2"]))
    assert cycle.code == errors.INVALID_PARAMS and cycle.data == {"cycle": ["w2", "w2"]}


async def test_approval_through_a_hook_is_refused(rpc):
    await rpc("prd.add", subject="drop the users table", risk="critical")
    err = await refused(rpc("approval.grant", item_id="w1", via="hook", user="agent"))
    assert err.code == errors.FORBIDDEN
    start = await refused(rpc("prd.update", id="w1", status="in_progress"))
    assert start.code == errors.FORBIDDEN
    assert (await rpc("approval.list"))["waiting"] == ["w1"]
    # The caller is this test's own process: a person only if it has a terminal of its own
    # (run from one, it has; under CI or an agent's tool it has not, and is refused).
    if procstate.stat(os.getpid()).tty_nr == 0:
        err = await refused(rpc("approval.grant", item_id="w1", via="cli", user="kim"))
        assert err.code == errors.FORBIDDEN and "no terminal of its own" in str(err)
        return
    await rpc("approval.grant", item_id="w1", via="cli", user="kim")
    assert (await rpc("prd.update", id="w1", status="in_progress"))["status"] == "in_progress"
    assert (await rpc("prd.list"))["items"][0]["approved"] is True


@pytest.mark.parametrize("mode,decision,reason", [
    (None, "allow", "plugkit gates (advisory; would deny): phase PLAN"),
    ("advisory", "allow", "plugkit gates (advisory; would deny): phase PLAN"),
    ("enforce", "deny", "phase PLAN"), ("off", "allow", ""),
])
async def test_gate_check_decisions_per_mode(rpc, mode, decision, reason):
    if mode:
        rpc.configure(f'gates = "{mode}"\n')
    res = await rpc("gate.check", event="PreToolUse", tool_name="Write",
                    tool_input={"file_path": str(rpc.work / "a.py"), "content": "x"})
    assert res["decision"] == decision and res["reason"].startswith(reason)
    assert res["mode"] == (mode or "advisory")
    ok = await rpc("gate.check", event="PreToolUse", tool_name="Bash", tool_input={"command": "exec:python 1"})
    assert ok["decision"] == "allow"


async def test_gate_stop_never_blocks_twice_in_a_row_for_the_same_reason(rpc):
    rpc.configure('gates = "enforce"\n')
    await rpc("mutable.add", name="x")
    first = await rpc("gate.stop", stop_hook_active=False)
    assert first["block"] and first["missing"] == sorted(first["missing"], key=len)
    assert "unknown mutables: x" in first["missing"]
    second = await rpc("gate.stop", stop_hook_active=True)
    assert second["block"] is False and second["missing"] == first["missing"]
    assert (await rpc("gate.stop", stop_hook_active=False))["block"]


async def test_status_context_and_snapshot(rpc):
    await rpc("prd.add", subject="first")
    status = await rpc("gate.status", cwd=rpc.work / "README" / "..")
    assert (status["phase"], status["next_phase"], status["mode"]) == ("PLAN", "EXECUTE", "advisory")
    assert status["workspace"] == str(rpc.work.resolve())
    lines = (await rpc("gate.context"))["lines"]
    assert lines[0].startswith("plugkit gates (advisory): phase PLAN") and "ready now: w1 first" in lines
    snap = await call(rpc.client, "debug.snapshot")
    assert "gates" in snap["snapshot"] and snap["snapshot"]["gates"]["counters"]
    assert git(rpc.work, "status", "--porcelain") == "?? .prd\n"  # .plugkit/ state stays out of git


async def test_every_method_validates_session_and_cwd(rpc, tmp_path):
    bad_cwd = await refused(rpc("gate.status", cwd=tmp_path / "missing"))
    no_session = await refused(rpc("mutable.list", session=""))
    bad_trigger = await refused(rpc("gate.retreat", trigger="unresolved_after_two_attempts", reason="x"))
    assert bad_cwd.code == no_session.code == bad_trigger.code == errors.INVALID_PARAMS


async def test_the_workspaces_verify_run_completes_an_item_checked_by_it(rpc):
    """gate verify's receipt names the HEAD it ran at: an item whose check is the workspace's
    completes on it, and one with a check of its own does not."""
    rpc.configure('gates = "enforce"\nverify = "echo verified"\n')
    await rpc("prd.add", id="w1", subject="uses the workspace's check")
    await rpc("prd.add", id="w2", subject="has its own", verify="echo mine")
    assert not (await rpc("gate.advance"))["ok"]  # this planning pass added the items: one more
    await to_verify(rpc)
    started = await rpc("gate.verify", wait_ms=10_000)
    receipt = started["verify"]["receipt"]
    assert (await rpc("evidence.show", receipt_id=receipt))["head"] == started["verify"]["head"]
    done = await rpc("prd.update", id="w1", status="completed", evidence=[receipt])
    assert done["status"] == "completed"
    err = await refused(rpc("prd.update", id="w2", status="completed", evidence=[receipt]))
    assert "is not a receipt of w2's check" in str(err)
