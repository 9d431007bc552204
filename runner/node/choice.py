"""Which node of the cluster takes an attempt: of the live nodes offering plugkit_worker, those
that answer a challenge with the node key (auth.py), and of those the one this supervisor's live
attempts load least. Run by the driver (driver.py); _prove runs on each node as a Ray task.
"""

import atexit
import os
import random
import secrets
from typing import Callable

from plugkit.protocol.node import DriverSpec
from plugkit.work import cluster
from runner.node import auth
from plugkit import locks

PROVE_TIMEOUT_S = 60.0  # a node's answer to the challenge (a fresh Ray worker process there)


def proven_node(spec: DriverSpec, record: Callable[..., None]) -> str:
    """The node for this attempt: of the live nodes offering plugkit_worker, those that answer
    the challenge with the node key (auth.py), the one least loaded (_claim). The ones that did
    not go on the record with why (record(refused_nodes=...): `work status`, `doctor`); none of
    ours: RuntimeError."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    key = cluster.read_secret(os.environ.get(cluster.NODE_KEY_VAR, ""))
    nodes = {n["NodeID"]: (n["NodeManagerAddress"], n["Resources"]["plugkit_worker"]) for n in ray.nodes()
             if n["Alive"] and n["Resources"].get("plugkit_worker", 0) > 0}
    challenge = secrets.token_hex(16)
    asked = {nid: ray.remote(_prove).options(num_cpus=0, max_retries=0, scheduling_strategy=(
        NodeAffinitySchedulingStrategy(nid, soft=False))).remote(challenge) for nid in nodes}
    proven, refused = [], {}
    for nid, ref in asked.items():
        try:
            why = auth.verdict(key, challenge, nid, ray.get(ref, timeout=PROVE_TIMEOUT_S))
        except Exception as exc:  # noqa: BLE001 - a node that cannot answer is not proven
            why = f"it did not answer the challenge ({type(exc).__name__})"
        if why is None:
            proven.append(nid)
        else:
            refused[f"{nid[:12]} ({nodes[nid][0]})"] = why
    record(refused_nodes=refused)
    if not proven:
        raise RuntimeError("no node of the cluster proved it is yours (the node key): "
                           + ("; ".join(f"{n}: {w}" for n, w in refused.items()) or "no node offers plugkit_worker"))
    return _claim(spec, proven, {nid: nodes[nid][1] for nid in proven})


def _claim(spec: DriverSpec, proven: list[str], slots: dict[str, float]) -> str:
    """Of the proven nodes, the one this supervisor's live attempts load least for its slots;
    the choice kept in a claim file (pid, node) until this driver exits. Ray's view of free
    slots lags: drivers of one wave asking at once would all see every slot free."""
    folder = os.path.dirname(spec.record)
    with locks.file_lock(os.path.join(folder, "claims.lock")):
        load = {nid: 0 for nid in proven}
        for name in os.listdir(folder):
            if not name.startswith("claim-"):
                continue
            try:
                with open(os.path.join(folder, name)) as fh:
                    pid, node = fh.read().split()
                os.kill(int(pid), 0)
            except (OSError, ValueError):
                _unlink(os.path.join(folder, name))  # its driver is gone
                continue
            if node in load:
                load[node] += 1
        pick = min(proven, key=lambda nid: (load[nid] / max(slots[nid], 1), random.random()))
        path = os.path.join(folder, f"claim-{os.getpid()}")
        with open(path, "w") as fh:
            fh.write(f"{os.getpid()} {pick}")
    atexit.register(_unlink, path)
    return pick


def _prove(challenge: str) -> dict:
    import ray

    from runner.node import auth as node_auth

    return node_auth.prove(challenge, ray.get_runtime_context().get_node_id())


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
