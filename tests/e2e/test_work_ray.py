"""`plugkit work --runtime ray` against a real Ray cluster on this machine (a head and two
worker nodes, each its own processes and directories): the same run lands the same way as
locally with items on both nodes, a lost node's item lands from the other node without
counting as a failure, `work stop` and a supervisor killed -9 leave nothing running on any
node, and what the trust boundary refuses."""

import json
import re
import os
import signal
import subprocess
import socket
import sys
import time

import psutil
import pytest

from tests.support.work_cli import Work, commit_file
from tests.support import ray_cluster
from tests.support.agent import git, make_repo
from tests.support.escapees import escapees, gone, kill_all, unique_seconds
from tests.support.runner_home import cli_argv, rpc
from tests.support.ray_work import RayWork, attempt_dirs, gateways, holds, node_dirs, ray_workers
from tests.support.person import person_cli

# The module's cluster starts inside its first test, and every attempt asks the cluster for its
# token check and each node for the node-key challenge: more than the default 120 s on a loaded VM.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster():
    c = ray_cluster.start(workers=2, per_node=2)
    yield c
    c.stop()


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo", 'gates = "advisory"\n')


def test_four_items_land_as_locally_with_items_on_both_nodes(home, repo, cluster):
    plan = {f"w{i}": [["say", f"on w{i}"], ["sleep", 2.0], *commit_file(f"w{i}.txt")] for i in range(1, 5)}
    plan["w1"].insert(1, ["shell", "echo home=$PLUGKIT_HOME port=$PLUGKIT_PORT"])
    w = RayWork(home, repo, plan, cluster)
    for i in range(1, 5):
        w.add(f"w{i}", "--verify", f"test -f w{i}.txt")
    w.start("--parallel", "4")
    followed = w.cli("work", "logs", "w1", "--follow").stdout  # live, from the node, until its worker ends
    assert "on w1" in followed, followed
    run = w.until(lambda r: r["ended_at"] is not None, timeout=150)
    items = w.items(run)
    assert run["state"] == "done" and run["runtime"] == "ray", [
        (i["id"], i["state"], i["message"], w.cli("work", "logs", i["id"], "--all").stdout[-1500:])
        for i in run["items"] if i["state"] != "completed"]
    assert all(items[f"w{i}"]["state"] == "completed" for i in range(1, 5)), run
    assert all((repo / f"w{i}.txt").exists() for i in range(1, 5))
    assert len(node_dirs(run)) == 2, run  # both nodes took items
    log = w.cli("work", "logs", "w1", "--all").stdout
    assert "on w1" in log and "[plugkit ray] on node" in log, log
    # Nothing of the supervisor's home travelled: the worker saw its node's home, not ours.
    assert f"home={cluster.root}/n" in log and str(home.path) not in log and f"port={home.port}" not in log, log
    receipts = json.loads(w.cli("evidence", "verify", "--json").stdout)
    assert receipts["ok"] and receipts["checked"] == 4, receipts
    status = w.cli("work", "status").stdout
    assert "workers on the Ray cluster" in status and "node " in status, status
    assert git(repo, "branch", "--list", "plugkit/*").split() == []
    view = rpc(home, "debug.snapshot")["snapshot"]["work"]["runs"][0]  # the same JSON as GET /debug
    assert view["runtime"] == "ray" and all(view["items"][f"w{i}"]["node"] for i in range(1, 5)), view


def test_only_the_commits_a_node_lacks_travel_to_it(home, repo, cluster):
    w = RayWork(home, repo, {f"w{i}": commit_file(f"w{i}.txt") for i in range(1, 4)}, cluster)
    for i in range(1, 4):
        w.add(f"w{i}", "--verify", f"test -f w{i}.txt")
    before = int(git(repo, "rev-list", "--count", "main").strip())
    w.start("--parallel", "1")  # one after another: each starts from the tip the last one landed
    run = w.until(lambda r: r["ended_at"] is not None, timeout=150)
    assert run["state"] == "done", run
    sent = [int(re.search(r"(\d+) commit\(s\) sent", w.cli("work", "logs", f"w{i}", "--all").stdout).group(1))
            for i in range(1, 4)]
    # Whole histories would be before, before+1, before+2. Two nodes, three items: at least one
    # item lands on a node that holds an earlier tip, and gets only what came after it.
    assert sent[0] == before and sum(sent) < 3 * before + 3, (before, sent)


def test_work_stop_leaves_no_process_on_any_node(home, repo, cluster):
    seconds = unique_seconds()
    w = RayWork(home, repo, {"w1": [["say", "up"], ["shell", f"sleep {seconds}"]],
                             "w2": [["say", "up"], ["shell", f"sleep {seconds}"]]}, cluster)
    w.add("w1", "--verify", "true")
    w.add("w2", "--verify", "true")
    try:
        w.start()
        w.until(lambda r: all(i["state"] == "running" and i.get("node") for i in r["items"]), timeout=90)
        deadline = time.monotonic() + 30
        while len(escapees(seconds)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(escapees(seconds)) == 2
        run = json.loads(w.cli("work", "stop", "--json").stdout)["run"]
        assert run["state"] == "stopped", run
        assert all((i["state"], i["reason"]) == ("killed", "stopped") for i in run["items"]), run
        assert gone(seconds, within=20), "a worker outlived `work stop` on its node"
    finally:
        kill_all(seconds)


def test_a_supervisor_killed_mid_run_leaves_nothing_unowned_and_the_next_run_lands(home, repo, cluster):
    seconds = unique_seconds()
    w = RayWork(home, repo, {"w1": [["say", "up"], ["shell", f"sleep {seconds}"]]}, cluster)
    w.add("w1", "--verify", "test -f w1.txt")
    try:
        w.start()
        w.until(lambda r: w.items(r)["w1"]["state"] == "running" and w.items(r)["w1"].get("node"), timeout=90)
        pid = home.discovery()["pid"]
        os.kill(pid, signal.SIGKILL)
        run = w.status()  # a new runner, from the run's file
        it = w.items(run)["w1"]
        assert (it["state"], it["reason"]) == ("killed", "runner_restarted"), run
        assert it["placement"].startswith("ray task "), it  # the store names the remote attempt
        assert gone(seconds, within=30), "the remote worker kept running after its supervisor died"
        w.plan_file.write_text(json.dumps({"w1": commit_file("w1.txt")}))
        w.start()
        run = w.until(lambda r: r["ended_at"] is not None, timeout=120)
        assert run["state"] == "done" and (repo / "w1.txt").exists(), run
    finally:
        kill_all(seconds)


def test_a_real_host_works_an_item_on_a_node_held_by_the_nodes_runner(tmp_path, home, cluster):
    """Claude Code on a node, its hooks answered by the node's runner as a local worker's are: a
    destructive command and the same through exec: denied with the policy's words, the token
    path showing its own capability, its first Stop turned back while nothing is committed."""
    from tests.hosts.hosts import HOSTS, installed
    from tests.hosts.model_server import ModelServer
    from tests.hosts.script import Say, Script, Scripts
    from tests.hosts.work_run import make_repo as host_repo, prompt_line

    host = installed(HOSTS["claude"])
    with ModelServer(Scripts([])) as server:
        work = host_repo(tmp_path, host, cli_argv(), server.url, {"w1": ("test -f w1.txt", ())})
        # A relative path: the worktree the host works in is the node's, not the supervisor's.
        # The committer identity is the repository's (tests/hosts/work_run.py), carried to the node.
        server.script = Scripts([Script([
            host.shell("rm -rf .."), host.shell("exec:bash\nrm -rf .."), host.shell('cat "$PLUGKIT_HOME/token"'),
            Say("w1 is done."),  # nothing committed yet: its Stop is turned back
            host.shell("echo done > w1.txt && git add -A && git commit -qm 'w1: add'"),
            Say("w1 is done and committed.")], prompt=prompt_line("w1"))])
        work.cli("work", "--worker", "claude-code", "--runtime", "ray", "--cluster", cluster.address,
                 "--stall-min", "2")
        run = work.until(lambda r: r["ended_at"] is not None, timeout=240)
        script = server.script.scripts[0]
        seen = [(s.turn, s.newest[-600:]) for s in script.main]
    it = {i["id"]: i for i in run["items"]}["w1"]
    why = (seen, it["message"], work.cli("work", "logs", "w1", "--all").stdout[-3000:])
    assert (run["state"], it["state"]) == ("done", "completed"), why
    assert it["node"] and (work.repo / "w1.txt").exists(), it
    # Its hooks were installed on the node and answered by the node's own runner (the host's
    # Bash calls went through a fail-closed PreToolUse), never the supervisor's.
    assert any((d / "home" / "port").exists() for d in cluster.nodes.values())
    assert all("plugkit hooks fail closed" not in text for _turn, text in seen), seen
    for turn in (0, 1):  # the worker policy's words, read by the model
        denied = script.reply_to(turn)
        assert denied is not None and "plugkit work" in denied.newest and "outside your worktree" in denied.newest, why
    shown = script.reply_to(2)
    node_tokens = [(d / "home" / "token").read_text().strip() for d in cluster.nodes.values()
                   if (d / "home" / "token").exists()]
    assert shown is not None and "pkw_" in shown.newest, why
    assert node_tokens and not any(t in shown.newest for t in node_tokens), why
    turned_back = script.reply_to(3)
    assert turned_back is not None and "nothing committed on plugkit/w1" in turned_back.newest, why
    assert "w1: add" in git(work.repo, "log", "-1", "--format=%s", "main")


def test_a_worker_on_a_node_is_held_by_its_nodes_runner_as_a_local_worker_is(home, repo, cluster):
    """The node's runner hosts the attempt: the worker policy answers its hooks and its exec:
    code, its Stop is turned back while nothing is committed, it holds a capability scoped to its
    item (not that runner's token), and its hook calls reach the supervisor as heartbeats: a
    worker quiet on output for longer than --stall-min while making hook calls is not stalled."""
    quiet_s = 28
    w = RayWork(home, repo, {"w1": [
        ["hook", "Bash", {"command": "rm -rf .."}],
        ["hook", "Bash", {"command": "exec:bash\nrm -rf .."}],
        ["hook", "Bash", {"command": "ls -la"}],
        ["shell", 'echo "TOKEN $(cat "$PLUGKIT_HOME/token")"'],
        ["cli", "approve", "w1"],
        ["stop"],
        ["say", "quiet now"], ["beat", quiet_s, 1.0], ["say", "loud again"],
        *commit_file("w1.txt"), ["stop"]]}, cluster)
    w.add("w1", "--verify", "test -f w1.txt")
    w.start("--stall-min", "0.25")  # 15 s: about a third of the time it is quiet on output
    run = w.until(lambda r: r["ended_at"] is not None, timeout=180)
    it = w.items(run)["w1"]
    log = w.cli("work", "logs", "w1", "--all").stdout
    assert (run["state"], it["state"]) == ("done", "completed"), (it, log[-3000:])  # never stalled
    assert "[plugkit ray] hosted by the node's runner" in log, log
    answers = [line for line in log.splitlines() if line.startswith("hook answer:")]
    assert len(answers) == 3, log
    for answer in answers[:2]:  # the policy's words, from the node's runner (the supervisor's never saw them)
        assert '"permissionDecision": "deny"' in answer and "plugkit work" in answer, answer
    assert "deny" not in answers[2], answers[2]
    # A capability at the token's path, not the node's runner's token; it reaches its own item only.
    seen = next(line.split()[1] for line in log.splitlines() if line.startswith("TOKEN "))
    tokens = {(d / "home" / "token").read_text().strip() for d in cluster.nodes.values()
              if (d / "home" / "token").exists()}
    assert seen.startswith("pkw_") and tokens and seen not in tokens and home.token() != seen, log
    assert "cli rc=1" in log and "a worker's capability reaches its own item" in log, log
    assert any("approval.grant" in r for r in it["refused"]), it  # refused on the node, kept on its item here
    stops = [line for line in log.splitlines() if line.startswith("stop answer:")]
    assert len(stops) == 2 and "nothing committed on plugkit/w1" in stops[0] and '"block"' in stops[0], stops
    assert "nothing committed" not in stops[1], stops  # committed: let through
    assert (repo / "w1.txt").exists()


def test_a_loopback_only_worker_on_a_node_reaches_its_model_and_its_nodes_runner_only(home, repo, cluster):
    """--network loopback-model on a node: the node's runner holds the worker's relay as ours does
    for a local worker (tests/e2e/test_work_network.py): the model and that runner answer, another
    loopback port of the machine does not, from the worker or from a task it runs through exec:."""
    from tests.support.work_network import PROBE, _grant, _net
    from tests.hosts.model_server import ModelServer
    from tests.hosts.script import Script

    with socket.socket() as other, ModelServer(Script([])) as model:
        other.bind(("127.0.0.1", 0))
        other.listen(8)
        w = RayWork(home, repo, {}, cluster)
        _grant(w, repo, model.url)
        w.add("w1", "--verify", "test -f done.txt")
        w.cli("work", "--runtime", "ray", "--cluster", cluster.address, "--network", "loopback-model",
              "--run", f"{sys.executable} {PROBE} {other.getsockname()[1]}")
        run = w.until(lambda r: r["ended_at"] is not None, timeout=150)
        seen = _net(w)
        assert seen.get("model") == "reached" and seen.get("runner") == "reached", (seen, w.cli(
            "work", "logs", "w1", "--all").stdout[-3000:])
        assert any("sandbox-probe" in u for u in model.unknown), model.unknown
        assert seen["other_loopback_port"] == seen["exec_other_loopback_port"] == "denied", seen
    it = w.items(run)["w1"]
    assert (it["state"], run["network"], run["runtime"]) == ("completed", "loopback-model", "ray"), run
    assert it["node"], it


def test_rejects_a_remote_cluster_that_is_neither_loopback_nor_tls(home, repo):
    w = Work(home, repo, {})
    w.add("w1", "--verify", "true")
    done = w.cli("work", "--run", "true", "--runtime", "ray", "--cluster", "10.0.0.5:6379", ok=False)
    assert done.returncode == 1 and "not on this machine" in done.stderr and "--allow-remote-cluster" in done.stderr
    done = w.cli("work", "--run", "true", "--runtime", "ray", ok=False)
    assert done.returncode == 1 and "--cluster HOST:PORT" in done.stderr, done.stderr
    assert "no plugkit work run" in w.cli("work", "status").stdout  # nothing was started, nothing sent


def test_doctor_checks_the_configured_cluster_and_the_config_places_the_run(home, repo, cluster):
    config = repo / ".plugkit" / "config.toml"
    config.write_text(config.read_text() + f'work_runtime = "ray"\nwork_cluster = "{cluster.address}"\n')
    git(repo, "commit", "-qam", "work on the cluster")
    done = home.cli("doctor", "--json", cwd=repo, timeout=200)
    rows = {r["check"]: r for r in json.loads(done.stdout)}
    assert rows["ray cluster"]["level"] == "ok" and "4 plugkit_worker slot(s)" in rows["ray cluster"]["detail"], rows
    nodes = [r for name, r in rows.items() if name.startswith("ray node ")]
    assert len(nodes) == 2 and all(r["level"] == "ok" and "plugkit " in r["detail"] for r in nodes), nodes
    w = RayWork(home, repo, {"w1": commit_file("w1.txt")}, cluster)
    w.add("w1", "--verify", "test -f w1.txt")
    Work.start(w)  # no --runtime, no --cluster: the workspace's held settings say where
    run = w.until(lambda r: r["ended_at"] is not None, timeout=120)
    assert (run["state"], run["runtime"], run["cluster"]) == ("done", "ray", cluster.address), run
    assert w.items(run)["w1"]["node"], run


def test_attempts_share_the_runners_one_ray_driver_and_a_warm_worker_process_per_node(home, repo, cluster):
    """Per item, a new Ray driver (Ray's import, its connection, the token check, each node's proof)
    and new Ray worker processes on every node cost seconds: the runner's one gateway per cluster
    places every attempt, across runs, and a node runs the next attempt in the Ray worker process
    that ran the last one."""
    w = RayWork(home, repo, {f"w{i}": commit_file(f"w{i}.txt") for i in range(1, 5)}, cluster)
    for i in range(1, 5):
        w.add(f"w{i}", "--verify", f"test -f w{i}.txt")
    logs = {}
    for items in (["w1", "w2", "w3"], ["w4"]):  # one after another, then a second run
        w.start("--parallel", "1", "--items", *items)
        run = w.until(lambda r: r["ended_at"] is not None, timeout=150)
        assert run["state"] == "done", run
        assert len(gateways()) == 1, gateways()
        logs.update({i: w.cli("work", "logs", i, "--all").stdout for i in items})
    gateway = gateways()[0]
    pids: dict[str, set[str]] = {}
    for log in logs.values():
        node, pid = re.search(r"on node (\w+) .*in its Ray worker process (\d+)", log).groups()
        pids.setdefault(node, set()).add(pid)
    assert sum(len(p) for p in pids.values()) < 4, pids  # two nodes, four attempts: one at least reused its process
    assert all(len(p) == 1 for p in pids.values()), pids
    home.stop_all()  # the runner's end is the gateway's (and Ray then ends its job's worker processes)
    assert psutil.wait_procs([gateway], timeout=20)[1] == [], gateway


def test_a_ray_run_warms_every_node_before_its_first_attempt(home, repo, cluster):
    """A wave met cold nodes one step after another: the gateway started at the first attempt,
    then each node's proof, then Ray worker processes started a few at a time, then the node's
    runner. The run starts its gateway, which proves each node and starts a warm Ray worker
    process per slot there while the run has not placed anything yet (here: its one item waits
    for a person's approval), and the attempt then runs in one of them."""
    w = RayWork(home, repo, {"w1": commit_file("w1.txt")}, cluster)
    w.add("w1", "--verify", "test -f w1.txt", "--risk", "critical")
    began = time.time() - 1
    w.start()
    run = w.settled()
    assert run["state"] == "waiting" and w.items(run)["w1"]["state"] == "waiting", run
    deadline, held, warm = time.monotonic() + 120, {}, {}
    while time.monotonic() < deadline:  # each node's slots held by processes of the gateway's job, nothing placed
        held = {n: holds(d, began) for n, d in cluster.nodes.items()}
        if all(h >= 2 for h in held.values()):
            break
        time.sleep(0.5)
    assert len(gateways()) == 1 and all(h >= 2 for h in held.values()), (gateways(), held)
    warm = set().union(*(ray_workers(cluster, n) for n in cluster.nodes))
    assert w.items(w.status())["w1"]["state"] == "waiting"  # nothing was placed to make them
    assert person_cli(w.home, "approve", "w1", cwd=w.repo, env=w.env).returncode == 0
    run = w.until(lambda r: r["ended_at"] is not None, timeout=150)
    assert run["state"] == "done", run
    log = w.cli("work", "logs", "w1", "--all").stdout
    pid = int(re.search(r"in its Ray worker process (\d+)", log).group(1))
    assert pid in warm, (pid, warm, log[-2000:])  # no process started for it: it found one waiting
    assert "--num-cpus" not in log, log  # the test nodes' CPUs cover their slots (choice.shortfall)


def test_a_runner_package_in_the_repository_never_runs_as_the_driver_or_gateway(tmp_path, home, cluster):
    """The driver and the gateway run unsandboxed with Ray's token: with the item's worktree or
    the workspace as cwd, `python -m runner.node.driver` would import a `runner` package the
    repository holds (a landed change, or plugkit's own repository) before plugkit's."""
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    ran = tmp_path / "planted-ran"
    for name in ("runner/__init__.py", "runner/node/__init__.py"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(f"open({str(ran)!r}, 'a').write(__name__ + '\\n')\n")
    for name in ("driver", "gateway", "placing", "task"):
        (repo / "runner" / "node" / f"{name}.py").write_text(f"open({str(ran)!r}, 'a').write(__name__ + '\\n')\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a runner package of the project's own")
    w = RayWork(home, repo, {"w1": commit_file("w1.txt")}, cluster)
    w.add("w1", "--verify", "test -f w1.txt")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None, timeout=150)
    assert not ran.exists(), ran.read_text()
    assert run["state"] == "done" and (repo / "w1.txt").exists(), run


def test_a_node_lost_mid_attempt_lands_from_the_other_node(home, repo, cluster):
    # Last in the module: it takes a node away from the cluster.
    w = RayWork(home, repo, {"w1": [[["say", "started"], ["sleep", 60]], commit_file("w1.txt")]}, cluster)
    w.add("w1", "--verify", "test -f w1.txt")
    before = {n: attempt_dirs(d) for n, d in cluster.nodes.items()}  # what earlier tests' attempts left
    w.start()
    run = w.until(lambda r: w.items(r)["w1"].get("node") and w.items(r)["w1"]["state"] == "running", timeout=90)
    first = w.items(run)["w1"]["node"]
    record = next(n for n, d in cluster.nodes.items() if attempt_dirs(d) - before[n])
    cluster.kill_node(record)
    run = w.until(lambda r: r["ended_at"] is not None, timeout=150)
    it = w.items(run)["w1"]
    assert (run["state"], it["state"]) == ("done", "completed"), json.dumps(run, indent=1)
    assert it["node_losses"] == 1 and it["node"] != first, (it, w.cli("work", "logs", "w1", "--all").stdout[-3000:])
    assert (repo / "w1.txt").exists()


def test_a_worker_forging_an_object_on_its_node_is_held_and_nothing_of_it_lands(home, repo, cluster):
    from tests.support.forge import FORGE

    w = RayWork(home, repo, {"w1": [["shell", FORGE], *commit_file("w1.txt")]}, cluster)
    w.add("w1", "--verify", "test -f w1.txt")
    w.start("--afk")
    run = w.until(lambda r: r["ended_at"] is not None, timeout=150)
    it = w.items(run)["w1"]
    assert (it["state"], it["reason"]) == ("blocked", "bad_objects"), json.dumps(run, indent=1)
    assert "hashes to" in it["message"] and "FORGED" in w.cli("work", "logs", "w1", "--all").stdout
    assert git(repo, "show", "main:README") == "a workspace\n" and not (repo / "w1.txt").exists()
    readme = git(repo, "rev-parse", "main:README").strip()
    clones = [os.path.join(d, c) for d, subs, _ in os.walk(cluster.root) if d.endswith("clones")
              for c in subs if c.endswith(".git")]
    assert clones, cluster.root
    for clone in clones:  # the node's own clone keeps the true object too
        shown = subprocess.run(["git", "cat-file", "-p", readme], cwd=clone, capture_output=True, text=True)
        assert shown.returncode != 0 or shown.stdout == "a workspace\n", (clone, shown.stdout)
