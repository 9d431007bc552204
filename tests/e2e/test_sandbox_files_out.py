"""Issue 40, items 3-5, through the real CLI, the real runner, real bwrap, a real ssh-agent:
a sandboxed program (an `exec:python --sandbox` task, a `--worker command` worker) writes
nothing the person or the runner runs later outside it (the workspace's .git, ~/.cache,
~/.local/share, a uv tool venv, a host's ~/.claude) and reaches none of the person's local
sockets (the ssh-agent, another program's socket under /tmp, an abstract socket).
The hostile program is tests/fixtures/local_attacks.py."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.work_cli import Work
from tests.support.agent import git, make_repo

pytestmark = pytest.mark.e2e
ATTACKS = Path(__file__).resolve().parents[1] / "fixtures" / "local_attacks.py"
# What the program may do without anything reaching outside (the test checks the real files).
PLANTS = ("home_cache", "home_share", "tool_venv", "host_state")


class Local:
    """The person's machine around the sandbox: an ssh-agent holding a key, another program's
    path socket and an abstract socket, a HOME with a uv tool venv and a host's settings."""

    def __init__(self, base: Path) -> None:
        self.base, self.home = base, base / "user"
        self.venv = self.home / ".local/share/uv/tools/plugkit/lib/python3.12/site-packages"
        self.venv.mkdir(parents=True)
        (self.home / ".claude").mkdir()
        (self.home / ".claude" / "settings.json").write_text("{}\n")
        self.agent_sock, self.other_sock = str(base / "agent.sock"), str(base / "other.sock")
        self.abstract = f"plugkit-test-{os.getpid()}-{time.monotonic_ns()}"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(base / "key")], check=True)
        self.agent = subprocess.Popen(["ssh-agent", "-D", "-a", self.agent_sock], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        self.sockets = [socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)]
        self.sockets[0].bind(self.other_sock)
        self.sockets[1].bind("\0" + self.abstract)
        for s in self.sockets:
            s.listen(8)
        for _ in range(200):
            if os.path.exists(self.agent_sock):
                break
            time.sleep(0.05)
        subprocess.run(["ssh-add", "-q", str(base / "key")], check=True, capture_output=True,
                       env={**os.environ, "SSH_AUTH_SOCK": self.agent_sock})

    def args(self) -> str:
        return f"{self.agent_sock} {self.other_sock} {self.abstract}"

    def close(self) -> None:
        for s in self.sockets:
            s.close()
        self.agent.terminate()
        self.agent.wait(10)

    def untouched(self) -> None:
        """Nothing planted reached the person's real files."""
        assert not (self.home / ".cache").exists() and not (self.home / ".local" / "share" / "planted.py").exists()
        assert os.listdir(self.venv) == []
        assert (self.home / ".claude" / "settings.json").read_text() == "{}\n"
        assert not Path("/tmp/pwned").exists()


@pytest.fixture
def local(tmp_path):
    found = Local(tmp_path)
    try:
        yield found
    finally:
        found.close()


def _attacks(text: str) -> dict[str, str]:
    return dict(line.split()[1:3] for line in text.splitlines() if line.startswith("ATTACK "))


def test_a_sandboxed_task_writes_no_git_home_code_and_reaches_no_local_socket(home, local, tmp_path):
    ws = make_repo(tmp_path / "ws", 'gates = "advisory"\n')
    config = (ws / ".git" / "config").read_text()
    code = f"import sys; sys.argv = ['x', *{local.args().split()!r}]\n" + ATTACKS.read_text()
    done = home.cli("exec:python", "--sandbox", "--", code, cwd=ws,
                    env={"HOME": str(local.home), "SSH_AUTH_SOCK": local.agent_sock})
    found = _attacks(done.stdout)
    assert len(found) == 10, (done.stdout, done.stderr)
    assert {k: v for k, v in found.items() if k not in PLANTS} == dict.fromkeys(
        ("git_config", "git_hook", "agent_variable", "ssh_agent", "path_socket", "abstract_socket"), "denied"), found
    assert found["home_cache"] == found["tool_venv"] == "denied", found  # HOME is read-only
    assert (ws / ".git" / "config").read_text() == config and not (ws / ".git" / "hooks" / "post-checkout").exists()
    local.untouched()
    assert git(ws, "status", "--short") == ""  # the person's git in the workspace: nothing of the task runs
    # What the sandbox adds: the same task outside it writes .git and reaches the agent.
    outside = _attacks(home.cli("exec:python", "--", code, cwd=ws, env={"HOME": str(local.home),
                                                                        "SSH_AUTH_SOCK": local.agent_sock}).stdout)
    assert outside["git_hook"] == outside["ssh_agent"] == outside["abstract_socket"] == "ALLOWED", outside


@pytest.mark.parametrize("network", ["host", "loopback-model"])
def test_a_hostile_worker_plants_nothing_outside_and_reaches_no_local_socket(home, local, tmp_path, network):
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    # A command worker whose program is named `claude`: it gets Claude Code's state row (~/.claude).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # The program whole in the one file its argv names: a checkout under /tmp (hidden in the
    # sandbox; only files named by absolute path are read back) runs it as well as any other.
    (bin_dir / "claude").write_text(f"#!{sys.executable}\n" + ATTACKS.read_text())
    (bin_dir / "claude").chmod(0o755)
    w = Work(home, repo, {})
    w.env.update(HOME=str(local.home), SSH_AUTH_SOCK=local.agent_sock)
    w.add("w1", "--verify", "test -f done.txt")
    w.cli("work", "--network", network, "--run", f"{bin_dir / 'claude'} {local.args()} --commit", "--json")
    run = w.until(lambda r: r["ended_at"] is not None)
    logs = w.cli("work", "logs", "w1").stdout
    found = _attacks(logs)
    assert len(found) == 10, logs
    for name in ("git_config", "git_hook", "agent_variable", "ssh_agent", "path_socket", "abstract_socket",
                 "home_cache", "home_share", "tool_venv"):
        assert found[name] == "denied", (name, logs)
    assert found["host_state"] == "ALLOWED", logs  # its own copy of ~/.claude: the host still runs
    local.untouched()
    wt_git = repo / ".plugkit" / "worktrees" / "w1" / ".git"
    assert not wt_git.exists() or "fsmonitor" not in wt_git.read_text()
    it = {i["id"]: i for i in run["items"]}["w1"]
    assert (it["state"], it["reason"]) == ("completed", "landed"), json.dumps(run, indent=1)
