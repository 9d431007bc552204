"""Who may give and take plugkit's work on a Ray cluster, on a real multi-node cluster on this
machine (tests/support/ray_cluster.py: token authentication, one node of ours holding the node
key) and a second local user the test creates (useradd, as root; CI is root), who runs its own
`ray start` and drivers through runuser:

- without the cluster's token that user can neither submit a task nor join a node;
- a cluster without token authentication (that user's own) is refused by `plugkit work`;
- with the token but not the node key, that user's node never receives an item (more free
  slots than ours notwithstanding), and `work status` and `doctor` name it with the reason;
- that user's node runner and ours run side by side, each on its own node's port;
- our node's runner killed -9 mid-attempt: the attempt is placed again at once, not stalled.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import LEAK_MARK
from tests.support.traversable import _traversable
from tests.support.work_cli import commit_file
from tests.support.ray_work import RayWork
from tests.support import ray_cluster
from tests.support.agent import make_repo
from tests.support.runner_home import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]  # a shared cluster's start counts in the first test
RAY_MAIN = "from ray.scripts.scripts import main; main()"
# A driver or node refused by the GCS retries its connection once a second, ~20 times, before it
# gives up; three tries show the refusal (its reason is asserted) without waiting out the rest.
REFUSED_QUICKLY = {"RAY_gcs_server_port_wait_time_s": "3"}
# This interpreter, down to its patch version: a node's Python must match the head's to join.
PYTHON = sys.executable


class Other:
    """The second local user: its own HOME, node directory and Ray temp dir, under `base`."""

    def __init__(self, base: Path, name: str) -> None:
        self.base, self.name = base, name
        self.node_dir = base / "node"
        self.env = {"PATH": "/usr/bin:/bin", "HOME": str(base / "home"),
                    "PLUGKIT_NODE_DIR": str(self.node_dir), "RAY_USAGE_STATS_ENABLED": "0",
                    LEAK_MARK: os.environ.get(LEAK_MARK, "")}

    def run(self, *argv: str, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess:
        env = [f"{k}={v}" for k, v in {**self.env, **extra}.items()]
        try:
            return subprocess.run(["runuser", "-u", self.name, "--", "env", "-i", *env, *argv], cwd=self.base,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            return subprocess.CompletedProcess(argv, -1, str(exc.stdout or ""), "timed out")

    def ray(self, *args: str, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess:
        return self.run(PYTHON, "-c", RAY_MAIN, *args, timeout=timeout, **extra)

    def uid(self) -> int:
        import pwd

        return pwd.getpwnam(self.name).pw_uid

    def kill_all(self) -> None:
        uid = self.uid()
        procs = [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid]
        for p in procs:
            try:
                p.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(procs, timeout=10)


@pytest.fixture(scope="module")
def both():
    """Our token cluster (one node of ours) and the second user, holding a copy of the token
    (a cluster shared with it) but not the node key."""
    if os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("runuser"):
        pytest.skip("creating a second local user needs root (CI runs as root)")
    base = Path(tempfile.mkdtemp(prefix="pkr2", dir="/tmp"))
    name = f"pkray{os.getpid() % 100000}"
    subprocess.run(["useradd", "--no-create-home", "--home-dir", str(base / "home"), "--shell", "/bin/sh", name],
                   check=True, capture_output=True)
    other = Other(base, name)
    modes = _traversable([Path(sysconfig.get_paths()["purelib"]), Path(PYTHON).resolve()])
    cluster = None
    try:
        for d in (base / "home", other.node_dir):
            d.mkdir(parents=True)
        base.chmod(0o755)
        cluster = ray_cluster.start(workers=1, per_node=2)
        shutil.copy(cluster.root / "auth_token", base / "token")
        subprocess.run(["chown", "-R", f"{name}:", str(base)], check=True)
        yield cluster, other
    finally:
        other.kill_all()
        if cluster is not None:
            cluster.stop()
        subprocess.run(["userdel", "-f", name], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
        for d, mode in modes:
            d.chmod(mode)


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo", 'gates = "advisory"\n')


def _alive(cluster) -> int:
    return len(cluster.resources())


def test_without_the_token_another_user_can_neither_submit_nor_join(both, home, repo):
    cluster, other = both
    code = ("import ray; ray.init(address=%r, logging_level='ERROR'); "
            "print('RAN', ray.get(ray.remote(lambda: __import__('os').getuid()).remote()))" % cluster.address)
    done = other.run(PYTHON, "-c", code, timeout=90, **REFUSED_QUICKLY)
    assert "RAN" not in done.stdout and "Authentication" in done.stdout + done.stderr, (done.stdout, done.stderr[-2000:])
    done = other.ray("start", "--address", cluster.address, "--temp-dir", str(other.base / "t0"), "--num-cpus", "1",
                     "--resources", '{"plugkit_worker": 4}', "--disable-usage-stats", timeout=60, **REFUSED_QUICKLY)
    assert done.returncode != 0 and "InvalidAuthToken" in done.stderr, (done.stdout, done.stderr[-2000:])  # refused
    other.kill_all()  # whatever of its `ray start` still retries
    assert _alive(cluster) == 2, cluster.resources()  # the head and our node only
    # Its own cluster, started without token authentication: plugkit sends no work there.
    port = free_port()
    done = other.ray("start", "--head", "--port", str(port), "--include-dashboard=false", "--temp-dir",
                     str(other.base / "t1"), "--num-cpus", "1", "--resources", '{"plugkit_worker": 2}',
                     "--disable-usage-stats", RAY_AUTH_MODE="disabled")
    assert done.returncode == 0, done.stderr[-2000:]
    try:
        w = RayWork(home, repo, {"w1": commit_file("w1.txt")}, cluster)
        w.add("w1", "--verify", "test -f w1.txt")
        done = w.cli("work", "--run", "true", "--runtime", "ray", "--cluster", f"127.0.0.1:{port}", ok=False)
        assert done.returncode == 1 and "without token authentication" in done.stderr, done.stderr
        assert "no plugkit work run" in w.cli("work", "status").stdout
    finally:
        other.kill_all()


def test_a_node_without_the_key_never_gets_an_item_and_is_named(both, home, repo):
    cluster, other = both
    done = other.ray("start", "--address", cluster.address, "--temp-dir", str(other.base / "t2"), "--num-cpus", "1",
                     "--object-store-memory", "80000000", "--resources", '{"plugkit_worker": 4}',
                     "--disable-usage-stats", RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(other.base / "token"))
    assert done.returncode == 0, done.stderr[-2000:]
    try:
        deadline = time.monotonic() + 60
        while sum(r.get("plugkit_worker", 0) for r in cluster.resources()) < 6:
            assert time.monotonic() < deadline, cluster.resources()
            time.sleep(0.5)
        w = RayWork(home, repo, {f"w{i}": commit_file(f"w{i}.txt") for i in range(1, 4)}, cluster)
        for i in range(1, 4):
            w.add(f"w{i}", "--verify", f"test -f w{i}.txt")
        w.start("--parallel", "3")
        run = w.until(lambda r: r["ended_at"] is not None, timeout=180)
        assert run["state"] == "done", [(i["id"], i["state"], i["message"]) for i in run["items"]]
        assert len({i["node"] for i in run["items"]}) == 1, run  # all on our one node
        assert not (other.node_dir / "clones").exists() and not (other.node_dir / "tmp").exists()
        assert len(run["refused_nodes"]) == 1 and "PLUGKIT_NODE_KEY" in next(iter(run["refused_nodes"].values())), run
        status = w.cli("work", "status").stdout
        assert "given no item: the node was started without PLUGKIT_NODE_KEY" in status, status
        config = repo / ".plugkit" / "config.toml"
        config.write_text(config.read_text() + f'work_runtime = "ray"\nwork_cluster = "{cluster.address}"\n')
        rows = json.loads(home.cli("doctor", "--json", cwd=repo, timeout=200).stdout)
        nodes = [r for r in rows if r["check"].startswith("ray node ")]
        assert sorted(r["level"] for r in nodes) == ["FAIL", "ok"], nodes
        assert any("given no item" in r["detail"] for r in nodes), nodes
    finally:
        other.kill_all()


def test_two_users_node_runners_run_side_by_side(both, home, repo):
    """Ours (started by the items above) and the other user's, each on its own node's port."""
    cluster, other = both
    ours = cluster.nodes["n1"]
    if not (ours / "home" / "port").exists():  # this test alone: an item starts it
        w = RayWork(home, repo, {"w1": commit_file("w1.txt")}, cluster)
        w.add("w1", "--verify", "test -f w1.txt")
        w.start()
        assert w.until(lambda r: r["ended_at"] is not None, timeout=150)["state"] == "done"
    code = ("import os, sys; from runner.node import hosting as n; "
            "root = os.environ['PLUGKIT_NODE_DIR']; os.makedirs(root + '/home', exist_ok=True); "
            "print('PORT', n.start(root + '/home', root, root)); print('INFO', n.call(root + '/home', 'runner.info', {}))")
    done = other.run(PYTHON, "-c", code)
    try:
        assert done.returncode == 0, (done.stdout, done.stderr[-2000:])
        theirs = int(next(line.split()[1] for line in done.stdout.splitlines() if line.startswith("PORT ")))
        mine = json.loads((ours / "home" / "port").read_text())["port"]
        assert theirs != mine and 32882 not in (theirs, mine), (theirs, mine)
        assert int((other.node_dir / "runner-port").read_text()) == theirs
        assert int((ours / "runner-port").read_text()) == mine
    finally:
        other.kill_all()


def test_our_node_runner_killed_mid_attempt_is_placed_again_not_stalled(both, home, repo):
    cluster, _other = both
    w = RayWork(home, repo, {"w1": [[["say", "started"], ["sleep", 600]], commit_file("w1.txt")]}, cluster)
    w.add("w1", "--verify", "test -f w1.txt")
    w.start("--stall-min", "10")
    w.until(lambda r: w.items(r)["w1"]["state"] == "running" and "started" in w.cli("work", "logs", "w1").stdout,
            timeout=120)
    pid = json.loads((cluster.nodes["n1"] / "home" / "port").read_text())["pid"]
    os.kill(pid, signal.SIGKILL)
    run = w.until(lambda r: r["ended_at"] is not None, timeout=110)  # long before the 600 s sleep or the watchdog
    it = w.items(run)["w1"]
    log = w.cli("work", "logs", "w1", "--all").stdout
    assert (run["state"], it["state"], it["node_losses"]) == ("done", "completed", 1), (it, log[-3000:])
    # Its runner was started again for the next attempt, on the port kept for the node.
    again = json.loads((cluster.nodes["n1"] / "home" / "port").read_text())
    assert again["pid"] != pid and again["port"] == int((cluster.nodes["n1"] / "runner-port").read_text()), again
