"""`plugkit doctor`'s look at a configured Ray cluster, as a process (the client never imports
the runner or Ray):

    python -m runner.node.probe HOST:PORT [--allow-remote-cluster]

Prints one JSON object: the Ray version of the cluster, and per live node its `plugkit_worker`
capacity, whether it answered the node-key challenge (auth.py; `refused` says why not), and
what a task placed on it finds there (plugkit, python, git, the worker hosts on its PATH with
their versions). Exit 1 when the cluster is refused (no token authentication) or cannot be reached.
"""

import json
import os
import secrets
import shutil
import subprocess
import sys
import time

from plugkit.protocol.node import NodeFacts, parse
from plugkit.work import cluster as trust, workers
from runner.node import auth

TIMEOUT_S = 60.0


def _hosts() -> dict[str, str]:
    """The worker hosts on this node's PATH, with the first line of `--version`."""
    found = {}
    for row in workers.WORKERS.values():
        exe = shutil.which(row.program) if row.program else None
        if exe is None:
            continue
        try:
            done = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=20)
            found[row.name] = (done.stdout.strip().splitlines() or ["?"])[0][:80]
        except (OSError, subprocess.SubprocessError):
            found[row.name] = "present (no --version)"
    return found


def _on_node(challenge: str) -> dict:
    """On the node: a NodeFacts' data, what it runs (plugkit, python, git, the worker hosts),
    where its directory is, and its answer to the node-key challenge."""
    from importlib import metadata

    import ray

    from runner.node import auth as node_auth, clone

    try:
        version = metadata.version("plugkit")
    except metadata.PackageNotFoundError:
        version = None
    return NodeFacts(plugkit=version, python=sys.version.split()[0], git=bool(shutil.which("git")),
                     dir=clone.node_dir(), at=time.time(), hosts=_hosts(),
                     proof=node_auth.prove(challenge, ray.get_runtime_context().get_node_id())).model_dump()


def main(argv: list[str]) -> int:
    address = argv[0] if argv else ""
    why = trust.refusal(address, os.environ, "--allow-remote-cluster" in argv)
    why = why or auth.token_refusal(address, os.environ)
    if why:
        print(json.dumps({"error": why}))
        return 1
    os.environ.update({k: v for k, v in trust.driver_env(os.environ, _home()).items()
                       if k.startswith("RAY_AUTH") or k == trust.NODE_KEY_VAR})
    auth.keep_loopback(address)
    key = trust.read_secret(os.environ[trust.NODE_KEY_VAR])
    challenge = secrets.token_hex(16)
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    except Exception as exc:  # noqa: BLE001 - unreachable in any way is one answer
        print(json.dumps({"error": f"cannot reach the Ray cluster at {address}: {str(exc)[:300]}"}))
        return 1
    nodes = [n for n in ray.nodes() if n["Alive"]]
    probe = ray.remote(_on_node)
    refs = {n["NodeID"]: probe.options(num_cpus=0, max_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(
        n["NodeID"], soft=False)).remote(challenge) for n in nodes if n["Resources"].get("plugkit_worker", 0) > 0}
    out = {"ray": ray.__version__, "nodes": []}
    for n in nodes:
        row = {"node": n["NodeID"][:12], "ip": n["NodeManagerAddress"],
               "plugkit_worker": int(n["Resources"].get("plugkit_worker", 0))}
        if n["NodeID"] in refs:
            try:
                facts = parse(NodeFacts, ray.get(refs[n["NodeID"]], timeout=TIMEOUT_S), "node's facts")
                row.update(facts.model_dump(exclude={"proof"}))
                refused = auth.verdict(key, challenge, n["NodeID"], facts.proof.model_dump())
                if refused:
                    row["refused"] = refused
            except Exception as exc:  # noqa: BLE001 - a node that cannot run plugkit says why
                row["error"] = str(exc).splitlines()[-1][:300]
        out["nodes"].append(row)
    print(json.dumps(out))
    return 0


def _home() -> str:
    from plugkit import paths

    return paths.home()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
