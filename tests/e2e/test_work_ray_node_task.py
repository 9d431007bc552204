"""The worker on a Ray node is a task of the node's own runner (runner/node/task.py -> work.run),
against a real Ray cluster on this machine, driven the way the gateway drives it (the attempt's
streaming Ray task, runner/node/placing.py's _on_node) by a driver process of the test's own:
the worker shows in that runner's task list and carries its task's tags; a worker leaving a
detached child leaves nothing once it ends; ray.cancel ends the worker and its children; the Ray
worker process killed -9 leaves nothing running on the node (the runner's pidfd, no guard)."""

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from runner.node import hosting
from tests.support import ray_cluster
from tests.support.agent import git, make_repo
from tests.support.escapees import escapees, gone, kill_all, unique_seconds

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

# The test's driver: submits the attempt as the gateway does, prints each event as a JSON line
# after "EV ",
# then (on a line of its stdin) cancels the task (plain ray.cancel) or just reads it to its end.
DRIVER = r"""
import json, sys
import ray
from runner.node import placing
address, spec, bundle_path = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
ray.init(address=address, logging_level="ERROR", log_to_driver=False)
bundle = open(bundle_path, "rb").read()
remote = ray.remote(placing._on_node).options(resources={"plugkit_worker": 1}, num_cpus=0, max_retries=0,
                                               num_returns="streaming")
gen = remote.remote(ray.put(bundle), spec)
def show(ev):
    print("EV", json.dumps({k: v.decode(errors="replace") if isinstance(v, bytes) else v for k, v in ev.items()}),
          flush=True)
for ref in gen:
    ev = ray.get(ref)
    show(ev)
    if ev["kind"] == "out" and b"up" in ev["data"]:
        break
print("EV", json.dumps({"kind": "ready"}), flush=True)
if sys.stdin.readline().strip() == "cancel":
    ray.cancel(gen)
try:
    for ref in gen:
        show(ray.get(ref))
except Exception as exc:
    print("EV", json.dumps({"kind": "ended", "error": type(exc).__name__}), flush=True)
print("EV", json.dumps({"kind": "over"}), flush=True)
"""


@pytest.fixture(scope="module")
def cluster():
    c = ray_cluster.start(workers=1, per_node=2)
    yield c
    c.stop()


class Attempt:
    """One attempt sent to the node by the test's driver, whose worker runs `script`."""

    def __init__(self, tmp_path, cluster, script: str, item: str) -> None:
        repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
        self.session = f"plugkit-work-ab12cd34-{item}-1"
        branch = f"plugkit/{item}"
        git(repo, "branch", branch)
        bundle = tmp_path / "base.bundle"
        git(repo, "bundle", "create", "-q", str(bundle), branch)
        spec = {"repo_key": str(repo), "branch": branch, "local_worktree": str(repo), "argv": ["sh", "-c", script],
                "env": {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}, "session": self.session,
                "run": "ab12cd34", "item": item, "attempt": 1, "sandbox": False, "kind": "command",
                "base": git(repo, "rev-parse", branch).strip()}
        self.node_home = str(next(iter(cluster.nodes.values())) / "home")
        self.proc = subprocess.Popen([sys.executable, "-c", DRIVER, cluster.address, json.dumps(spec), str(bundle)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.events: list[dict] = []

    def until(self, kind: str) -> dict:
        for line in self.proc.stdout:
            if not line.startswith("EV "):  # Ray's own lines (the raylet telling of a killed worker)
                continue
            ev = json.loads(line[3:])
            self.events.append(ev)
            if ev["kind"] == kind:
                return ev
        raise AssertionError(f"the driver ended before {kind!r}: {self.events}")

    def say(self, what: str) -> None:
        self.proc.stdin.write(what + "\n")
        self.proc.stdin.flush()

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()

    def task(self) -> dict:
        """The worker's task as the node's runner lists it (debug.snapshot)."""
        snap = hosting.call(self.node_home, "debug.snapshot", {})["snapshot"]
        return next(t for t in snap["tasks"] if t["session_id"] == self.session)


def _both_up(seconds: str) -> bool:
    """Until the worker and its detached child both run ("up" is said before they exec sleep)."""
    deadline = time.monotonic() + 60
    while len(escapees(seconds)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    return len(escapees(seconds)) == 2


def _tagged_task(pid: int) -> str:
    return psutil.Process(pid).environ().get("PLUGKIT_TASK_ID", "")


def test_the_worker_is_the_node_runners_task_and_its_detached_child_goes_with_its_end(tmp_path, cluster):
    seconds = unique_seconds()
    a = Attempt(tmp_path, cluster, f"setsid sleep {seconds} & echo up; sleep 3; echo bye", "w1")
    try:
        at = a.until("node")
        a.until("ready")
        task = a.task()
        assert task["lang"] == "worker" and task["state"] == "running", task
        deadline = time.monotonic() + 60
        while not escapees(seconds) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = escapees(seconds)
        assert left and all(_tagged_task(p) == str(task["task_id"]) for p in left), left  # its tree is the task's
        assert not any(p.pid == at["pid"] for p in psutil.Process(left[0]).parents())  # not under the Ray worker
        a.say("read")
        done = a.until("done")
        assert done["rc"] == 0 and "bye" in "".join(e.get("data", "") for e in a.events), a.events
        assert gone(seconds, within=30), "the worker's detached child outlived it on the node"
        a.until("over")
    finally:
        a.end()
        kill_all(seconds)


def test_ray_cancel_ends_the_worker_and_its_children(tmp_path, cluster):
    seconds = unique_seconds()
    a = Attempt(tmp_path, cluster, f"setsid sleep {seconds} & echo up; exec sleep {seconds}", "w2")
    try:
        a.until("ready")
        assert _both_up(seconds)
        task_id = a.task()["task_id"]
        a.say("cancel")
        a.until("over")
        assert gone(seconds, within=60), "a cancelled attempt's worker kept running on the node"
        snap = hosting.call(a.node_home, "debug.snapshot", {})["snapshot"]
        assert next(t for t in snap["tasks"] if t["task_id"] == task_id)["state"] == "killed", snap
    finally:
        a.end()
        kill_all(seconds)


def test_the_ray_worker_process_killed_leaves_nothing_running_on_the_node(tmp_path, cluster):
    seconds = unique_seconds()
    a = Attempt(tmp_path, cluster, f"setsid sleep {seconds} & echo up; exec sleep {seconds}", "w3")
    try:
        at = a.until("node")
        a.until("ready")
        assert _both_up(seconds)
        os.kill(at["pid"], signal.SIGKILL)  # no `finally` runs there: the node's runner alone ends it
        assert gone(seconds, within=60), "the worker outlived the Ray worker process running its attempt"
        a.say("read")
        ended = a.until("over")
        assert ended and any(e["kind"] == "ended" for e in a.events), a.events
    finally:
        a.end()
        kill_all(seconds)
