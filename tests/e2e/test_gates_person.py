"""The person check is positive (issue 28, item 4): an approval is taken only from a process
with a controlling terminal that no agent host, task or adopted orphan holds. Each attack
here was accepted as a person's `terminal` approval before: "no agent found" passed."""

import base64
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.approvals import agent, fake_host, run_under_host, waiting  # noqa: F401 (fixture)
from tests.support.person import at_terminal
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e


def detached(command: str, out: str = "approve.out") -> str:
    """The agent's shell call: `command` spelled in base64 (the hook never sees `approve`),
    started in a new session by a subshell that exits at once, so it is reparented to
    init and no agent host or task is left above it; then its answer is waited for."""
    hidden = base64.b64encode(f"{command}; echo rc=$?".encode()).decode()
    return (f"(setsid sh -c \"$(echo {hidden} | base64 -d)\" > {out} 2>&1 &); "
            f"for i in $(seq 200); do grep -q rc= {out} 2>/dev/null && break; sleep 0.1; done; cat {out}")


def in_terminal(home, cwd: Path, argv: list[str]) -> subprocess.CompletedProcess:
    return at_terminal(argv, home.env, cwd=cwd)


def test_rejects_an_approve_detached_with_setsid_from_an_agent_hosts_shell(agent, home, tmp_path):
    done = run_under_host(home, agent, fake_host(tmp_path), detached("plugkit approve c7"))
    assert "rc=1" in done.stdout and "no terminal of its own" in done.stdout, (done.stdout, done.stderr)
    assert "c7" in waiting(agent)


@pytest.mark.parametrize("name", ["opencode", "kilo", "copilot"])
def test_rejects_a_hidden_approve_under_every_host_plugkit_installs(agent, home, tmp_path, name):
    # The host runs in a person's terminal, so the terminal is there: only the host table
    # can tell the host's shell from the person's.
    hidden = base64.b64encode(b"plugkit approve c3").decode()
    command = f"sh -c \"$(echo {hidden} | base64 -d)\"; echo rc=$?"
    done = in_terminal(home, agent.repo, [str(fake_host(tmp_path, name)), command])
    assert "rc=1" in done.stdout and "approval refused" in done.stdout, (done.stdout, done.stderr)
    assert "c3" in waiting(agent)


def test_rejects_an_approve_in_a_pty_of_its_own_detached_from_an_agent_hosts_shell(agent, home, tmp_path):
    # `script` gives the approve a terminal whose session holds nothing else, and setsid takes
    # `script` away from the host: what is left is the environment the host gave its shell
    # (Claude Code sets CLAUDECODE=1 in its Bash tool's, which the fake host's caller does here).
    hidden = base64.b64encode(b"plugkit approve c6; echo rc=$?").decode()
    command = (f'(setsid script -qec "sh -c \\"\\$(echo {hidden} | base64 -d)\\"" /dev/null > pty.out 2>&1 &); '
               "for i in $(seq 200); do grep -q rc= pty.out 2>/dev/null && break; sleep 0.1; done; cat pty.out")
    env = {**home.env, "PATH": f"{Path(cli_argv()[0]).parent}:{os.environ['PATH']}", "CLAUDECODE": "1"}
    done = subprocess.run([str(fake_host(tmp_path)), command], cwd=agent.repo, env=env, capture_output=True,
                          text=True, timeout=60)
    assert "rc=1" in done.stdout and "CLAUDECODE from Claude Code" in done.stdout, (done.stdout, done.stderr)
    assert "c6" in waiting(agent)


def test_rejects_an_approve_orphaned_inside_a_terminal_an_agent_host_holds(agent, home, tmp_path):
    # Reparented to init but still in the host's terminal session: the session holds the host.
    hidden = base64.b64encode(b"plugkit approve c2; echo rc=$?").decode()
    command = (f"(sh -c \"$(echo {hidden} | base64 -d)\" > bg.out 2>&1 &); "
               "for i in $(seq 200); do grep -q rc= bg.out 2>/dev/null && break; sleep 0.1; done; cat bg.out")
    done = in_terminal(home, agent.repo, [str(fake_host(tmp_path)), command])
    assert "rc=1" in done.stdout and "its terminal is held by Claude Code" in done.stdout, (done.stdout, done.stderr)
    assert "c2" in waiting(agent)


def test_a_person_in_a_terminal_of_their_own_still_approves(agent, home):
    shell = in_terminal(home, agent.repo, ["sh", "-c", "plugkit approve c4 --session agent-1; echo rc=$?"])
    assert "rc=0" in shell.stdout and "approved c4" in shell.stdout, (shell.stdout, shell.stderr)
    [given] = agent.json("approve", "--list")["approvals"]
    assert given["channel"] == "terminal" and given["tty"].startswith("/dev/pts/")
