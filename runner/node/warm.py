"""A gateway's nodes made ready before its first attempt arrives: as soon as the gateway is
connected, every live node offering plugkit_worker proves itself (choice.py) while it starts one
Ray worker process of the gateway's job per slot.

Why: a wave's attempts met cold nodes one step after another (measured on a loaded 2-core
machine: the proof 17 s, then the slots' worker processes, started a few at a time, 6-19 s), each
waiting on the last. Here they overlap with each other and with the runner's own work (worktrees,
hooks) before the first attempt is placed. The node's runner is still started by the first
attempt there (hosting.start): started here, it kept a process busy for its seconds, and on a
node of one slot the attempt then waited for fresh processes (the runner's first remote item
took 15.6 s against 7.7 s). A node of one slot (or one CPU) gets no hold: the challenge's task
makes its one process.

Each slot's process is made by a hold task that waits, on a barrier of files in the node's
directory, until every hold of its round has started: a task that ended at once would hand its
process to the next hold, and the node would keep one warm process, not one per slot. The holds
need no plugkit_worker and no CPU: they never keep an attempt from its slot. Nothing secret travels
in a hold (a round's random name and a count), so a node that has not proved itself yet gets its
processes too; it is given no attempt until it has.
"""

import os
import secrets
import threading
import time

from runner.node import choice

HOLD_WAIT_S = 60.0  # a round's holds wait this long at most for each other (fresh processes on a loaded node)


def start(nodes: choice.Nodes) -> threading.Thread:
    thread = threading.Thread(target=warm, args=(nodes,), daemon=True, name="warm nodes")
    thread.start()
    return thread


def warm(nodes: choice.Nodes) -> None:
    """Runs in the gateway (Ray connected): the proof and the holds at once, awaited here, so that
    a failure shows in no attempt (each attempt meets its node as it is, and a claim waits on the
    proof under way)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    try:
        live = {n["NodeID"]: n["Resources"] for n in ray.nodes()
                if n["Alive"] and n["Resources"].get("plugkit_worker", 0) > 0}
        held: list = []

        def holds() -> None:
            for nid, res in live.items():
                count = min(int(res["plugkit_worker"]), int(res.get("CPU", 0)))
                if count < 2:  # the challenge's own task makes a node's one process
                    continue
                pinned = NodeAffinitySchedulingStrategy(nid, soft=False)
                round_ = secrets.token_hex(8)
                held.extend(ray.remote(_hold).options(num_cpus=0, max_retries=0, scheduling_strategy=pinned)
                            .remote(round_, count) for _ in range(count))

        nodes.prove_live(holds)  # the holds start while the nodes answer the challenge
        ray.wait(held, num_returns=len(held), timeout=HOLD_WAIT_S + choice.PROVE_TIMEOUT_S)
    except Exception:  # noqa: BLE001 - a warm-up that failed leaves the nodes as cold as before, no worse
        pass


def _hold(round_: str, count: int) -> None:
    """On the node: this Ray worker process kept until every hold of the round has one."""
    from runner.node import clone

    folder = clone.made(os.path.join(clone.node_dir(), "warm"))
    _sweep(folder)
    # Each hold's file stays until a later round sweeps it: one removed as its hold left would
    # keep the round's last hold from ever counting them all.
    open(os.path.join(folder, f"{round_}-{os.getpid()}"), "w").close()
    deadline = time.monotonic() + HOLD_WAIT_S
    while time.monotonic() < deadline:
        if sum(name.startswith(round_) for name in os.listdir(folder)) >= count:
            return
        time.sleep(0.05)  # off every attempt's path: holds only wait for each other


def _sweep(folder: str) -> None:
    """Earlier rounds' files (older than any round's wait)."""
    old = time.time() - 2 * HOLD_WAIT_S
    for name in os.listdir(folder):
        try:
            path = os.path.join(folder, name)
            if os.stat(path).st_mtime < old:
                os.unlink(path)
        except OSError:
            pass
