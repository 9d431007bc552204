"""A workspace with critical items waiting for a person, and the stand-ins the approval tests
run things under: an agent host (its process name, its Bash tool) and a person at a terminal."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.agent import SID, Agent, make_repo
from tests.support.runner_home import cli_argv

ITEMS = ("c1", "c2", "c3", "c4", "c5", "c6", "c7")


@pytest.fixture
def agent(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "enforce"\n')
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    for item in ITEMS:
        agent.plugkit("prd", "add", f"risky {item}", "--id", item, "--risk", "critical")
    return agent


def waiting(agent: Agent) -> list[str]:
    return agent.json("approve", "--list")["waiting"]


def fake_host(tmp_path: Path, name: str = "claude") -> Path:
    """A stand-in agent host: its process name is `claude` and it runs its Bash tool's
    command as `bash -c COMMAND`, as Claude Code does."""
    host = tmp_path / "bin" / name
    host.parent.mkdir(exist_ok=True)
    host.write_text(f"#!{sys.executable}\nimport subprocess, sys\n"
                    "sys.exit(subprocess.run(['bash', '-c', sys.argv[1]]).returncode)\n")
    host.chmod(0o755)
    return host


def run_under_host(home, agent: Agent, host: Path, command: str) -> subprocess.CompletedProcess:
    env = {**home.env, "PATH": f"{Path(cli_argv()[0]).parent}:{os.environ['PATH']}"}
    return subprocess.run([str(host), command], cwd=agent.repo, env=env, capture_output=True, text=True,
                          timeout=60)


def status(agent: Agent, item_id: str) -> str:
    return next(i["status"] for i in agent.json("prd", "list")["items"] if i["id"] == item_id)


def person(home, agent: Agent, *args: str) -> subprocess.CompletedProcess:
    """A person typing a plugkit verb in their own terminal (pty.spawn gives it one)."""
    argv = cli_argv() + list(args) + ["--session", SID, "--cwd", str(agent.repo)]
    spawn = f"import pty, sys; sys.exit(pty.spawn({argv!r}) >> 8)"
    return subprocess.run([sys.executable, "-c", spawn], env=home.env, capture_output=True, text=True, timeout=60)
