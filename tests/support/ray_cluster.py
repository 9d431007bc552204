"""A real Ray cluster on this machine for tests and the bench: a head (no worker capacity) and
worker nodes, each its own `ray start` with its own temp dir and node directory
(PLUGKIT_NODE_DIR: its clone cache, plugkit home and its runner's port) and
`plugkit_worker` capacity.

Token authentication on (RAY_AUTH_MODE=token, the token in a 0600 file of the cluster's), and
each node given the node key (PLUGKIT_NODE_KEY) it answers the driver's challenge with; `start`
puts both in this process's environment for the runners and CLIs a test starts (`stop` takes
them out).

Every process a node starts carries a tag naming the cluster and the node in its
environment, so a node is killed (a lost node) and the cluster torn down by those processes
only: never `ray stop`, which ends every Ray process of the user on the machine.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from tests.support.runner_home import free_port

TAG = "PLUGKIT_TEST_RAY"
RAY = str(Path(sys.executable).with_name("ray"))
SMALL = ["--object-store-memory", "80000000", "--disable-usage-stats"]


def tagged(value_prefix: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get(TAG, "").startswith(value_prefix) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def _with_children(procs: list[psutil.Process]) -> list[psutil.Process]:
    """The processes and all their descendants: Ray's agents rewrite their title over their
    environment, so the tag is no longer readable there (they outlived `stop` as orphans)."""
    found = {p.pid: p for p in procs}
    for p in procs:
        try:
            found.update({c.pid: c for c in p.children(recursive=True)})
        except psutil.Error:
            continue
    return list(found.values())


def _kill(procs: list[psutil.Process]) -> None:
    procs = _with_children(procs)
    for p in procs:
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=10)


@dataclass
class Cluster:
    root: Path
    address: str
    name: str
    nodes: dict[str, Path] = field(default_factory=dict)  # node name -> its PLUGKIT_NODE_DIR

    def node_of(self, node_dir: str) -> str:
        return next(n for n, d in self.nodes.items() if str(d) == node_dir)

    def kill_node(self, node: str) -> None:
        """A lost node: its raylet and Ray's processes on it die at once (SIGKILL)."""
        _kill([p for p in tagged(f"{self.name}/{node}") if _is_ray(p)])

    def resources(self) -> dict:
        code = ("import json, ray; ray.init(address=%r, logging_level='ERROR', log_to_driver=False); "
                "print(json.dumps([n['Resources'] for n in ray.nodes() if n['Alive']]))" % self.address)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                              env=_env(self.name, "probe", None, self.secrets))
        return json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else {}

    @property
    def secrets(self) -> dict[str, str]:
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(self.root / "auth_token"),
                "PLUGKIT_NODE_KEY": str(self.root / "node_key")}

    def stop(self) -> None:
        _kill(tagged(self.name + "/"))
        for key, value in self.secrets.items():
            if os.environ.get(key) == value:
                del os.environ[key]
        shutil.rmtree(self.root, ignore_errors=True)


def _is_ray(p: psutil.Process) -> bool:
    try:
        line = " ".join(p.cmdline())
    except psutil.Error:
        return False
    return "raylet" in line or line.startswith("ray::") or "/ray/" in line


def _env(name: str, node: str, node_dir, secrets: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLUGKIT_", "RAY_"))}
    env.update({TAG: f"{name}/{node}", "RAY_USAGE_STATS_ENABLED": "0", **(secrets or {})})
    if node_dir is not None:  # the node's own directory, and its runner's port (one machine, many nodes)
        env.update(PLUGKIT_NODE_DIR=str(node_dir))  # its runner picks its own port (kept in node_dir)
    return env


def _start(args: list[str], env: dict) -> None:
    done = subprocess.run([RAY, "start", *args], env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"ray start failed: {done.stderr[-2000:]}")


def start(workers: int = 2, per_node: int = 2) -> Cluster:
    """The head, then `workers` nodes with `per_node` worker slots each. Short paths: Ray's
    sockets live under the temp dir, and a socket path is at most 107 bytes."""
    root = Path(tempfile.mkdtemp(prefix="pkray", dir="/tmp"))
    port = free_port()
    name = root.name
    cluster = Cluster(root, f"127.0.0.1:{port}", name)
    try:
        from plugkit.work.cluster import make_secret

        for path in (root / "auth_token", root / "node_key"):
            make_secret(str(path))
        _start(["--head", "--port", str(port), "--include-dashboard=false", "--temp-dir", str(root / "h"),
                "--resources", json.dumps({"plugkit_worker": 0}), "--num-cpus", "1", *SMALL], _env(name, "head", None, cluster.secrets))
        for i in range(1, workers + 1):
            node_dir = root / f"n{i}"
            node_dir.mkdir()
            _start(["--address", cluster.address, "--temp-dir", str(node_dir / "t"),
                    "--resources", json.dumps({"plugkit_worker": per_node}), "--num-cpus", str(per_node), *SMALL],
                   _env(name, f"n{i}", node_dir, cluster.secrets))
            cluster.nodes[f"n{i}"] = node_dir
        deadline = time.monotonic() + 60
        while sum(r.get("plugkit_worker", 0) for r in cluster.resources()) < workers * per_node:
            if time.monotonic() > deadline:
                raise RuntimeError("the Ray cluster's nodes never showed their plugkit_worker capacity")
            time.sleep(0.5)
        os.environ.update(cluster.secrets)
    except BaseException:
        cluster.stop()
        raise
    return cluster
