"""The worker sandbox as an unprivileged user the test creates (useradd, as root; CI is root,
so this runs there): the whole stack (runner, CLI, bwrap through user namespaces, the
workers) runs as that user, and what a worker tries beyond its item is still denied: the
filesystem attacks (tests/fixtures/sandbox_attacks.py), the runner reached beyond its own
capability (tests/fixtures/capability_attacks.py), a loopback port outside
`--network loopback-model` (tests/fixtures/network_probe.py).

The user runs the system's python3 over this checkout's installed packages (PYTHONPATH): the
test's own interpreter may sit where no other user can reach it (/root)."""

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import psutil
import pytest

from tests.conftest import LEAK_MARK
from tests.hosts.model_server import ModelServer
from tests.hosts.script import Script
from tests.support.escapees import gone, kill_all, unique_seconds
from tests.support.runner_home import free_port
from tests.support.traversable import _traversable

pytestmark = pytest.mark.e2e
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SYSTEM_PYTHON = "/usr/bin/python3"


def _same_python() -> bool:
    try:
        out = subprocess.run([SYSTEM_PYTHON, "-c", "import sys; print(sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return False
    return out == str(tuple(sys.version_info[:2]))


class User:
    """A fresh unprivileged user with its own $HOME (holding a credential), PLUGKIT_HOME and repo."""

    def __init__(self, base: Path, name: str) -> None:
        self.base, self.name = base, name
        self.home, self.plugkit_home, self.repo = base / "user", base / "plugkit", base / "repo"
        self.env = {"PATH": "/usr/bin:/bin", "HOME": str(self.home), "PLUGKIT_HOME": str(self.plugkit_home),
                    "PLUGKIT_PORT": str(free_port()), "PYTHONPATH": sysconfig.get_paths()["purelib"],
                    LEAK_MARK: os.environ.get(LEAK_MARK, "")}

    def run(self, *argv: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
        env = [f"{k}={v}" for k, v in self.env.items()]
        done = subprocess.run(["runuser", "-u", self.name, "--", "env", "-i", *env, *argv], cwd=cwd or self.repo,
                              capture_output=True, text=True, timeout=120)
        if check:
            assert done.returncode == 0, (argv, done.stdout, done.stderr)
        return done

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.run(SYSTEM_PYTHON, "-m", "client.cli", *args, check=check)

    def work(self, item: str, program: str, *flags: str) -> tuple[dict, str]:
        """One run of `item` by a command worker; (the item when the run ended, its logs)."""
        self.cli("work", "--items", item, "--run", program, *flags)
        for _ in range(120):
            run = json.loads(self.cli("work", "status", "--json", "--wait", "2", check=False).stdout)["run"]
            if run["ended_at"] is not None:
                break
        it = next(i for i in run["items"] if i["id"] == item)
        logs = self.cli("work", "logs", item).stdout
        if (self.repo / "done.txt").exists():  # each fixture commits done.txt: the next item must add it again
            self.run("git", "rm", "-q", "done.txt")
            self.run("git", "commit", "-qm", "a person clears the way for the next item")
        return it, logs

    def uid(self) -> int:
        import pwd

        return pwd.getpwnam(self.name).pw_uid



@pytest.fixture
def user():
    if os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("runuser"):
        pytest.skip("creating an unprivileged user needs root (CI runs as root)")
    if not _same_python():
        pytest.skip(f"{SYSTEM_PYTHON} is not this interpreter's version: it cannot load the installed packages")
    base = Path(tempfile.mkdtemp(prefix="plugkit-unpriv-"))
    name = f"pksbx{os.getpid() % 100000}"
    subprocess.run(["useradd", "--no-create-home", "--home-dir", str(base / "user"), "--shell", "/bin/sh", name],
                   check=True, capture_output=True)
    u = User(base, name)
    modes = _traversable([Path(sysconfig.get_paths()["purelib"]), FIXTURES])
    try:
        for d in (u.home / ".ssh", u.plugkit_home):
            d.mkdir(parents=True)
        (u.home / ".ssh" / "id_rsa").write_text("-----BEGIN FAKE KEY-----\n")
        base.chmod(0o755)
        subprocess.run(["chown", "-R", f"{name}:", str(base)], check=True)
        yield u
    finally:
        u.cli("runner", "stop", check=False)
        for p in psutil.process_iter(["uids"]):  # what is left of its processes, one by one
            try:
                if p.info["uids"] and p.info["uids"].real == u.uid():
                    p.kill()
            except psutil.Error:
                continue
        subprocess.run(["userdel", "-f", name], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
        for d, mode in modes:
            d.chmod(mode)


def _repo(u: User, granted: list[str]) -> None:
    u.run("git", "init", "-q", "-b", "main", str(u.repo), cwd=u.base)
    for key, value in (("user.name", "Agent"), ("user.email", "agent@example.invalid"), ("commit.gpgsign", "false")):
        u.run("git", "config", key, value)
    u.run("sh", "-c", "mkdir .plugkit && echo 'a workspace' > README && printf '%s\\n' 'gates = \"advisory\"' "
                      f"'work_credentials = {json.dumps(granted)}' > .plugkit/config.toml")
    u.run("git", "add", "-A")
    u.run("git", "commit", "-qm", "init")
    for item in ("w1", "w2", "w3", "w4"):
        u.cli("prd", "add", item, "--id", item, "--verify", "test -f done.txt")


def _attacks(logs: str) -> dict[str, str]:
    return dict(line.split()[1:3] for line in logs.splitlines() if line.startswith(("ATTACK ", "NET ")))


def test_as_an_unprivileged_user_a_worker_is_still_confined(user):
    _repo(user, ["PYTHONPATH", "PLUGKIT_E2E_MODEL_BASE_URL"])
    assert "self-test passed" in user.cli("doctor", check=False).stdout
    seconds = unique_seconds()
    try:
        runner_pid = json.loads((user.plugkit_home / "port").read_text())["pid"]
        it, logs = user.work("w1", f"{SYSTEM_PYTHON} {FIXTURES / 'sandbox_attacks.py'} {user.repo} {seconds} "
                                   f"{runner_pid}")
        found = _attacks(logs)
        assert len(found) == 12 and set(found.values()) == {"denied"}, logs
        assert (it["state"], it["reason"]) == ("completed", "landed"), it
        assert (user.repo / "README").read_text() == "a workspace\n"
        assert not (user.base / "outside.txt").exists() and gone(seconds)
    finally:
        kill_all(seconds)
    user.cli("exec:bash", "--session", "person", "echo person-secret")
    it, logs = user.work("w2", f"{SYSTEM_PYTHON} {FIXTURES / 'capability_attacks.py'} {user.repo} person")
    found = _attacks(logs)
    assert len(found) == 10 and set(found.values()) == {"denied"}, logs
    token = (user.plugkit_home / "token").read_text().strip()
    assert token not in logs and "TOKEN pkw_" in logs and "person-secret" not in logs, logs
    with ModelServer(Script([])) as model, socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen(8)
        user.env["PLUGKIT_E2E_MODEL_BASE_URL"] = model.url
        it, logs = user.work("w3", f"{SYSTEM_PYTHON} {FIXTURES / 'network_probe.py'} {other.getsockname()[1]}",
                             "--network", "loopback-model")
    assert _attacks(logs) == {"model": "reached", "other_loopback_port": "denied", "runner": "reached",
                              "exec_other_loopback_port": "denied"}, logs
    assert it["state"] == "completed", it
