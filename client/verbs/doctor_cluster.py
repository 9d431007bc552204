"""`plugkit doctor`'s rows for the Ray cluster a workspace sends its workers to
(work_runtime = "ray"): reachable, its Ray version, each node's plugkit_worker capacity and
what plugkit, python and worker hosts it has. The look itself is a process
(runner/node/probe.py): the client never imports the runner or Ray."""

import json
import os
import subprocess
import sys


def configured(cwd: str):
    """The workspace's held settings (work_runtime, work_cluster), or None outside a workspace."""
    from plugkit.lifecycle import config
    from plugkit.workspace import find_root

    try:
        return config.load(os.path.join(find_root(cwd), ".plugkit", "config.toml"))
    except Exception:  # noqa: BLE001 - not in a workspace: no cluster configured here
        return None


def check_cluster():
    """The Ray cluster the workspace here sends workers to (work_runtime = "ray"), if any."""
    cfg = configured(os.getcwd())
    if cfg is None or cfg.work_runtime != "ray":
        return
    try:
        done = subprocess.run([sys.executable, "-P", "-m", "runner.node.probe", cfg.work_cluster or ""],
                              capture_output=True, text=True, timeout=180)
        found = json.loads((done.stdout.strip().splitlines() or ["{}"])[-1])
        if "nodes" not in found and "error" not in found:
            found = {"error": (done.stderr.strip().splitlines() or ["the probe said nothing"])[-1]}
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        found = {"error": str(exc)}
    yield from cluster_rows(cfg.work_cluster, found)


def cluster_rows(address, found: dict):
    """doctor's rows from runner/node/probe.py's JSON: the cluster, then one row per node."""
    if "error" in found:
        yield "FAIL", "ray cluster", found["error"][:300], "`ray status` on the head; README: plugkit work on Ray"
        return
    capacity = sum(n["plugkit_worker"] for n in found["nodes"])
    yield ("ok" if capacity else "FAIL"), "ray cluster", (
        f"{address}: Ray {found['ray']}, {len(found['nodes'])} node(s), {capacity} plugkit_worker slot(s)"), (
        "" if capacity else "start nodes with --resources '{\"plugkit_worker\": N}'")
    for n in found["nodes"]:
        if not n["plugkit_worker"]:
            continue
        if n.get("refused"):  # it may run plugkit, but not as one of ours: no item goes there
            yield "FAIL", f"ray node {n['node']}", f"{n['ip']}: given no item: {n['refused']}", \
                "start the node with PLUGKIT_NODE_KEY naming your node key (README: plugkit work on Ray)"
            continue
        if "error" in n or not n.get("plugkit"):
            yield "FAIL", f"ray node {n['node']}", n.get("error", "plugkit is not installed there"), \
                "install the same plugkit on every node"
            continue
        hosts = ", ".join(f"{k} {v}" for k, v in n.get("hosts", {}).items()) or "no worker host on its PATH"
        yield "ok", f"ray node {n['node']}", (f"{n['ip']}: {n['plugkit_worker']} slot(s), plugkit {n['plugkit']}, "
                                               f"python {n['python']}, {hosts}"), ""
