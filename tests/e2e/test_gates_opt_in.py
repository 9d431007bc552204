"""The gates stay silent where nobody asked for them: in a workspace that never used them,
Stop says nothing, SessionStart carries only the exec: guidance and a write is not warned
about; once the workspace opts in (a gate command, a .prd, a .plugkit/config.toml) the
advisory messages are back. Through the real `plugkit hook` CLI and a real runner."""

import json
import subprocess

import pytest

from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e


def hook(home, event: str, data: dict) -> subprocess.CompletedProcess:
    done = subprocess.run(cli_argv() + ["hook", event, "--platform", "claude-code"],
                          input=json.dumps(dict(data, hook_event_name=event)), capture_output=True,
                          text=True, env=home.env, timeout=90)
    assert done.returncode == 0, done.stderr
    return done


def context(done: subprocess.CompletedProcess) -> str:
    return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def talk(home, work, sid: str) -> dict[str, str]:
    base = {"session_id": sid, "cwd": str(work)}
    start = context(hook(home, "SessionStart", dict(base, source="startup")))
    stop = hook(home, "Stop", dict(base, stop_hook_active=False)).stdout
    write = hook(home, "PreToolUse", dict(base, tool_name="Write",
                                          tool_input={"file_path": str(work / "a.py"), "content": "x = 1\n"})).stdout
    return {"start": start, "stop": stop, "write": write}


def opt_in_by_gate_command(home, work) -> None:
    assert home.cli("mutable", "add", "answer", "--cwd", str(work)).returncode == 0


def opt_in_by_prd(home, work) -> None:
    (work / ".prd").write_text("[]\n")


def opt_in_by_config(home, work) -> None:
    (work / ".plugkit").mkdir()
    (work / ".plugkit" / "config.toml").write_text('gates = "advisory"\n')


def test_an_untouched_directory_hears_only_the_exec_guidance(home, tmp_path):
    work = tmp_path / "untouched"
    (work / ".git").mkdir(parents=True)  # a repository is a workspace, but not an opt-in
    said = talk(home, work, "quiet")
    assert said["start"].count("\n") <= 1 and "exec:<lang>" in said["start"], said["start"]
    assert "gate" not in said["start"]
    assert said["stop"] == "" and said["write"] == ""
    assert not (work / ".plugkit").exists() and not (work / ".prd").exists()  # the hooks wrote nothing


@pytest.mark.parametrize("opt_in", [opt_in_by_gate_command, opt_in_by_prd, opt_in_by_config])
def test_an_opted_in_workspace_gets_the_advisory_messages(home, tmp_path, opt_in):
    work = tmp_path / "opted"
    work.mkdir()
    opt_in(home, work)
    said = talk(home, work, "loud")
    assert "plugkit gates (advisory)" in said["start"] and "exec:<lang>" in said["start"]
    assert "plugkit gates (advisory)" in json.loads(said["stop"])["systemMessage"]
    assert "would deny" in context(subprocess.CompletedProcess([], 0, said["write"]))
