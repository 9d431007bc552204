"""Which node of the cluster takes an attempt: of the live nodes offering plugkit_worker, those
that answer a challenge with the node key (auth.py), and of those the one the gateway's live
attempts load least. Kept by the gateway (gateway.py) for its life; _prove runs on each node as
a Ray task.

A node proves itself once per gateway: a Ray node id names one raylet's life (a node restarted
is a new id, challenged again), and the answer is bound to that id (auth.answer).
"""

import os
import random
import secrets
import threading
from typing import Callable

from plugkit.work import cluster
from runner.node import auth

PROVE_TIMEOUT_S = 60.0  # a node's answer to the challenge (a fresh Ray worker process there)
HELD_KEPT = 64  # commits remembered per node and project, newest first (as clone.have answers)


class Nodes:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proven: set[str] = set()  # node ids that answered the challenge
        self.refused: dict[str, str] = {}  # "id (address)" -> why not ours
        self.load: dict[str, int] = {}  # node id -> this gateway's attempts on it now
        self.short: dict[str, str] = {}  # node id -> why it cannot run its slots at once (shortfall)
        self._asking = threading.Lock()  # one round of challenges at a time: attempts of a wave share it
        # (node, project) -> the commits its clone holds refs to, as last asked or since sent: a
        # second task per attempt to ask again would take a second Ray worker process on the node
        # (its lease races the first's return), and that one is never warm.
        self.tips: dict[tuple[str, str], list[str]] = {}

    def _live(self) -> dict[str, tuple[str, float]]:
        import ray

        live = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("plugkit_worker", 0) > 0]
        with self.lock:
            for n in live:
                why = shortfall(n["Resources"])
                if why:
                    self.short[n["NodeID"]] = why
                else:
                    self.short.pop(n["NodeID"], None)
        return {n["NodeID"]: (n["NodeManagerAddress"], n["Resources"]["plugkit_worker"]) for n in live}

    def _prove_new(self, nodes: dict[str, tuple[str, float]], meanwhile: Callable[[], None] = lambda: None) -> None:
        """Challenge the live nodes not yet proven (those refused are asked again: a node may
        be given its key); their verdicts kept."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        with self._asking:
            new = [nid for nid in nodes if nid not in self.proven]
            if not new:
                meanwhile()
                return
            key = cluster.read_secret(os.environ.get(cluster.NODE_KEY_VAR, ""))
            challenge = secrets.token_hex(16)
            asked = {nid: ray.remote(_prove).options(num_cpus=0, max_retries=0, scheduling_strategy=(
                NodeAffinitySchedulingStrategy(nid, soft=False))).remote(challenge) for nid in new}
            meanwhile()  # after the challenges: they take the first process each node has
            for nid, ref in asked.items():
                try:
                    why = auth.verdict(key, challenge, nid, ray.get(ref, timeout=PROVE_TIMEOUT_S))
                except Exception as exc:  # noqa: BLE001 - a node that cannot answer is not proven
                    why = f"it did not answer the challenge ({type(exc).__name__})"
                name = f"{nid[:12]} ({nodes[nid][0]})"
                with self.lock:
                    if why is None:
                        self.proven.add(nid)
                        self.refused.pop(name, None)
                    else:
                        self.refused[name] = why

    def prove_live(self, meanwhile: Callable[[], None]) -> None:
        """Every live node offering plugkit_worker challenged now (warm.py), not at the first
        claim; `meanwhile` runs once the challenges are sent (at once when none is needed)."""
        self._prove_new(self._live(), meanwhile)

    def claim(self, record: Callable[..., None]) -> str:
        """The node for an attempt: of the live nodes that proved they are ours, the one this
        gateway's live attempts load least for its slots, counted as loaded until release(). The
        ones that did not prove it go on the record with why (record(refused_nodes=...): `work
        status`, `doctor`); none of ours: RuntimeError."""
        nodes = self._live()
        self._prove_new(nodes)
        with self.lock:
            refused = {n: w for n, w in self.refused.items() if n.split()[0] in {i[:12] for i in nodes}}
            proven = [nid for nid in nodes if nid in self.proven]
            if proven:
                pick = min(proven, key=lambda nid: (self.load.get(nid, 0) / max(nodes[nid][1], 1), random.random()))
                self.load[pick] = self.load.get(pick, 0) + 1
        record(refused_nodes=refused)
        if not proven:
            raise RuntimeError("no node of the cluster proved it is yours (the node key): "
                               + ("; ".join(f"{n}: {w}" for n, w in refused.items()) or "no node offers plugkit_worker"))
        return pick

    def forget(self, node: str) -> None:
        """A node lost under an attempt: it proves itself again before it takes another. Ray lists
        a killed node alive for a while, and the proof cached from before would place the retry
        on it, to be lost a second time; a dead node does not answer the challenge."""
        with self.lock:
            self.proven.discard(node)
            for key in [k for k in self.tips if k[0] == node]:
                del self.tips[key]

    def held(self, node: str, repo_key: str) -> list[str] | None:
        with self.lock:
            return self.tips.get((node, repo_key))

    def holds(self, node: str, repo_key: str, tips: list[str] | None) -> None:
        """What the node's clone holds after an attempt; None: unknown (an attempt that did not end
        well there, its clone perhaps gone), asked again next time."""
        with self.lock:
            if tips is None:
                self.tips.pop((node, repo_key), None)
            else:
                self.tips[(node, repo_key)] = list(dict.fromkeys(tips))[:HELD_KEPT]

    def release(self, node: str) -> None:
        with self.lock:
            self.load[node] = max(0, self.load.get(node, 0) - 1)


def shortfall(resources: dict[str, float]) -> str | None:
    """Why a node runs fewer of its slots' attempts at once than it offers, or None. Ray sizes a
    node's pool of worker processes by its CPU count: it keeps at most that many warm and starts
    at most that many at a time (and no more than the machine's cores), whatever plugkit_worker
    says. A node of 4 slots and 1 CPU ran a wave of 4 one after another, each in a fresh process."""
    slots, cpus = int(resources.get("plugkit_worker", 0)), int(resources.get("CPU", 0))
    if cpus >= slots:
        return None
    return (f"it offers {slots} plugkit_worker slot(s) but {cpus} CPU(s): Ray keeps {cpus} worker process(es) "
            f"warm there, so attempts wait for fresh ones; `ray start --num-cpus {slots}` (or more) on it")


def _prove(challenge: str) -> dict:
    import ray

    from runner.node import auth as node_auth

    return node_auth.prove(challenge, ray.get_runtime_context().get_node_id())
