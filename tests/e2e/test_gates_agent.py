"""The lifecycle gates end to end: an agent-like script takes a git workspace from PLAN to
COMPLETE through the real `plugkit` CLI and the real Claude Code hooks, against a real
runner (auto-started by SessionStart), and every shortcut on the way is refused with the
reason an agent needs to find the honest path."""

import json
import shlex

import pytest

from client.wire.rpc import RpcFailure
from plugkit import errors
from tests.support.agent import SID, Agent, git, make_repo
from tests.support.person import person_cli
from tests.support.runner_home import cli_argv, rpc

pytestmark = pytest.mark.e2e

VERIFY = "test -f hello.txt && grep -q hello hello.txt"


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo", f'gates = "enforce"\nverify = "{VERIFY}"\nverify_lang = "bash"\n')


def test_agent_reaches_complete_only_the_honest_way(home, repo, tmp_path):
    agent = Agent(home, repo)
    start = agent.hook("SessionStart", source="startup")  # starts the runner
    context = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "plugkit gates (enforce): phase PLAN" in context

    # PLAN, nothing named yet: writing is refused, naming the phase.
    decision, reason = agent.write("hello.txt", "hello\n")
    assert decision == "deny" and reason.startswith("phase PLAN: files are written from EMIT on")

    # Plan: one unknown (what the greeting must be) and two work items, one critical.
    agent.plugkit("mutable", "add", "greeting", "--expected", "hello", "--description", "the greeting's text")
    agent.plugkit("prd", "add", "write", "hello.txt", "--acceptance", "hello.txt says hello")
    agent.plugkit("prd", "add", "publish", "hello.txt", "--risk", "critical", "--blocked-by", "w1")

    # Shortcuts while an unknown is open: write, commit, edit .prd by hand.
    decision, reason = agent.write("hello.txt", "hello\n")
    assert decision == "deny" and "phase PLAN" in reason and "unknown mutables: greeting" in reason
    decision, reason = agent.bash("git add -A && git commit -m 'just ship it'")
    assert (decision, reason) == ("deny", "git commit/push while mutables are unknown: greeting")
    decision, reason = agent.write(".prd", "[]")
    assert decision == "deny" and "changed through plugkit" in reason
    assert agent.bash("git status --short") == ("allow", "")  # ordinary shell calls pass untouched

    # Approval: the agent typing `plugkit approve` is sent to the person (Claude Code asks),
    # and the item cannot start without it.
    decision, reason = agent.bash("plugkit approve w2")
    assert decision == "ask" and "person's decision" in reason
    assert agent.bash("/opt/tools/bin/plugkit approve w2")[0] == "ask"  # a path is no way around it
    for platform, event, tool in (("codex", "PreToolUse", "Bash"), ("gemini", "BeforeTool", "run_shell_command")):
        # Neither platform can ask a person from a hook: the call is denied, saying who must do it.
        out = json.loads(agent.hook(event, platform, tool_name=tool,
                                    tool_input={"command": "plugkit approve w2"}).stdout)
        said = out.get("reason") or out["hookSpecificOutput"]["permissionDecisionReason"]
        assert out.get("decision", "deny") == "deny" and "ask the user to do it themselves" in said
    # exec: code that approves is still the agent approving: asked before anything runs.
    decision, reason = agent.bash("exec:bash\n" + shlex.join(cli_argv() + ["approve", "w2"]))
    assert decision == "ask" and "person's decision" in reason
    with pytest.raises(RpcFailure) as caught:  # nor may anything claim to come through a hook
        rpc(home, "approval.grant", {"session_id": SID, "cwd": str(repo), "item_id": "w2", "via": "hook",
                                     "user": "agent"})
    assert caught.value.code == errors.FORBIDDEN
    assert agent.json("approve", "--list")["waiting"] == ["w2"]

    # PLAN -> EXECUTE: the first advance declares a pass that added things, so it stays
    # (and status says so beforehand, instead of inviting an advance that will be refused).
    preview = {c["name"]: c["holds"] for c in agent.json("gate", "status")["conditions"]}
    assert preview == {"plan_pass_declared": True, "last_pass_added_nothing": False}
    held = agent.plugkit("gate", "advance", ok=False)
    assert "still PLAN" in held.stdout and "last_pass_added_nothing" in held.stdout
    agent.plugkit("gate", "advance", "EXECUTE")
    assert agent.phase() == "EXECUTE"
    assert agent.write("hello.txt", "hello\n")[0] == "deny"  # still before EMIT
    held = agent.plugkit("gate", "advance", ok=False)
    assert "all_mutables_known: greeting" in held.stdout

    # A witness from another workspace is no witness (same answer as an unknown id).
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    foreign, _ = agent.exec_task("echo hello", cwd=elsewhere)
    refused = agent.plugkit("mutable", "resolve", "greeting", f"task_{foreign}", ok=False)
    assert f"no task_{foreign} ran in this workspace" in refused.stderr

    # Nor is a task still running: its output is not final.
    running, reason = agent.exec_task("echo hello; sleep 30", wait="0.5")
    assert f"task_{running} is still running" in reason
    refused = agent.plugkit("mutable", "resolve", "greeting", str(running), ok=False)
    assert f"task_{running} is still" in refused.stderr and "only a finished task is a witness" in refused.stderr
    closed = agent.hook("PreToolUse", tool_name="Bash", tool_input={"command": f"exec:close task_{running}"})
    assert f"closed task_{running}" in json.loads(closed.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    [greeting] = agent.json("mutable", "list")["mutables"]
    assert (greeting["status"], greeting["attempts"]) == ("UNKNOWN", 0)  # refusals are not attempts

    # The honest resolution: a finished run in this workspace, its value read by the runner.
    witness, reason = agent.exec_task("echo greeting=hello")
    assert "completed: exit 0" in reason
    resolved = agent.json("mutable", "resolve", "greeting", str(witness), "--regex", "greeting=(\\w+)")
    assert resolved["known"] and resolved["mutable"]["value"] == "hello"
    receipt = agent.json("evidence", "show", resolved["receipt"])
    assert (receipt["task"]["task_id"], receipt["task"]["exit_code"]) == (witness, 0)

    # EXECUTE -> EMIT; now the write goes through and git commit is no longer refused.
    agent.plugkit("gate", "advance", "EMIT")
    assert agent.write("hello.txt", "hello\n") == ("allow", "")
    (repo / "hello.txt").write_text("hello\n")
    agent.plugkit("gate", "emit", "hello.txt")  # relative to --cwd, not to the shell's directory
    assert agent.json("gate", "status")["emission"] == ["hello.txt"]

    # Stopping with a dirty tree is blocked with what is missing; asked again while the
    # agent is already continuing because of that block, it is not blocked a second time.
    blocked, reason = agent.stop()
    assert blocked and "uncommitted changes: .prd, hello.txt" in reason and "phase is EMIT" in reason
    blocked, note = agent.stop(active=True)
    assert not blocked and "uncommitted changes" in note
    assert agent.stop()[0]  # a fresh turn is blocked again

    # Work items: completing needs a green run of the item's check (here the workspace's) at
    # HEAD, witnessed by the runner; the critical one needs a person's approval too.
    agent.plugkit("prd", "update", "w1", "--status", "in_progress")
    refused = agent.plugkit("prd", "update", "w1", "--status", "completed", ok=False)
    assert "requires naming evidence receipts" in refused.stderr
    file_receipt = agent.json("evidence", "add", "--file", "hello.txt", "--subject", "w1")["id"]
    refused = agent.plugkit("prd", "update", "w1", "--status", "completed", "--evidence", file_receipt[:8], ok=False)
    assert "is not a receipt of w1's check" in refused.stderr and "plugkit prd verify w1" in refused.stderr
    checked = agent.json("prd", "verify", "w1")
    assert checked["outcome"] == "green" and checked["check"] == VERIFY
    agent.plugkit("prd", "update", "w1", "--status", "completed", "--evidence", checked["receipt"][:8])
    refused = agent.plugkit("prd", "update", "w2", "--status", "in_progress", ok=False)
    assert "critical-risk: a person must approve it first" in refused.stderr
    # The person, in their own terminal (never inside a runner task, whatever ran this test).
    approved = person_cli(home, "approve", "w2", "--session", SID, "--cwd", str(repo), env={"PLUGKIT_TASK_ID": ""})
    assert approved.returncode == 0 and approved.stdout.startswith("approved w2 as "), approved.stderr
    agent.plugkit("prd", "update", "w2", "--status", "in_progress")
    checked = agent.json("prd", "verify", "w2")
    agent.plugkit("prd", "update", "w2", "--status", "completed", "--evidence", checked["receipt"])

    # Commit (the hook lets it through now), then EMIT -> VERIFY -> COMPLETE.
    assert agent.bash("git add hello.txt .prd && git commit -m 'say hello'") == ("allow", "")
    git(repo, "add", "hello.txt", ".prd")
    git(repo, "commit", "-q", "-m", "say hello")
    agent.plugkit("gate", "advance", "VERIFY")
    held = agent.plugkit("gate", "advance", ok=False)
    assert "verify_green: not run in this VERIFY phase" in held.stdout
    verified = agent.json("gate", "verify", "--wait", "20")
    assert verified["verify"]["outcome"] == "green" and verified["task"]["state"] == "completed"
    assert agent.json("evidence", "verify")["ok"]
    agent.plugkit("gate", "advance", "COMPLETE")

    status = agent.json("gate", "status")
    assert status["phase"] == "COMPLETE"
    assert [(t["from_phase"], t["to_phase"]) for t in status["history"]] == [
        ("PLAN", "EXECUTE"), ("EXECUTE", "EMIT"), ("EMIT", "VERIFY"), ("VERIFY", "COMPLETE")]
    assert agent.stop() == (False, "")  # done: Stop is allowed, silently
    decision, reason = agent.write("hello.txt", "hello again\n")
    assert decision == "deny" and reason.startswith("phase COMPLETE")
    assert git(repo, "status", "--porcelain") == ""  # the gates' own bookkeeping stayed out of git


@pytest.mark.parametrize("mode", ["advisory", "off"])
def test_advisory_gates_warn_instead_of_denying_and_off_gates_stay_silent(home, tmp_path, mode):
    repo = make_repo(tmp_path / "repo", f'gates = "{mode}"\n')
    agent = Agent(home, repo)
    context = json.loads(agent.hook("SessionStart", source="startup").stdout)["hookSpecificOutput"]
    agent.plugkit("mutable", "add", "port")  # recorded whatever the mode: the gates only stop judging
    (repo / "scratch.txt").write_text("uncommitted\n")
    write, commit, approve = (agent.write("a.txt", "x = 1\n"), agent.bash("git commit -am wip"),
                              agent.bash("plugkit approve w1"))
    stop = agent.stop()
    if mode == "off":
        assert "plugkit gates" not in context["additionalContext"]
        assert write == commit == approve == ("allow", "") and stop == (False, "")
        return
    assert "plugkit gates (advisory): phase PLAN" in context["additionalContext"]
    warning = "plugkit gates (advisory; would deny): "
    assert write[0] == "allow" and write[1].startswith(warning + "phase PLAN") and "unknown mutables: port" in write[1]
    assert commit == ("allow", warning + "git commit/push while mutables are unknown: port")
    assert approve[0] == "ask"  # a person's decision is not softened into a warning
    blocked, note = stop
    assert not blocked and note.startswith("plugkit gates (advisory): not done yet")
    assert "uncommitted changes: scratch.txt" in note and "unknown mutables: port" in note
