"""One remote attempt, placed by the gateway (gateway.py) and relayed back: from the runner's spec
to the worker's exit code.

It places the attempt only on a node that proved it is ours (choice.py: the node key's challenge,
the least loaded); it submits one Ray task needing {"plugkit_worker": 1} (max_retries=0: a lost
node is ours to report and place again, not Ray's to retry silently), sends it the NodeAttempt and
reads its events (plugkit/protocol/node.py), writes where it landed to the spec's `record` file
(with the count of the worker's hook calls its node's runner answered: the heartbeat
RayPlacement.seen reads; and the calls it refused, for the item's `refused`), hands the output on
as it arrives, fetches the returned bundle into the local worktree, and answers the worker's code,
or NODE_LOST_RC when the node went away.

The Ray task runs in the gateway's Ray job, so its node keeps the job's worker processes between
attempts (warm: no Python and Ray start per attempt), and only the commits the node's clone lacks
travel to it.
"""

import os
import re
import tempfile
import threading
import time
from typing import Callable, Optional

from plugkit.protocol import node as msg
from plugkit.protocol.node import BAD_OBJECTS_RC, CLUSTER_RC, NODE_LOST_RC, DriverSpec, NodeAttempt, Record
from runner.node import choice
from runner.system import git

Say = Callable[[bytes], None]


def _git(worktree: str, *args: str) -> git.Done:
    return git.run_sync(worktree, *args, timeout=300)


def _bundle(worktree: str, branch: str, have: list[str]) -> tuple[Optional[bytes], int]:
    """(a bundle of what the node lacks of the branch, how many commits it holds): only the
    commits not reachable from what the node's clone cache has already travel; None when the
    node has them all."""
    known = [h for h in have if _git(worktree, "cat-file", "-e", f"{h}^{{commit}}").rc == 0]
    count = int(_git(worktree, "rev-list", "--count", branch, "--not", *known, "--").out.strip() or 0)
    if count == 0:
        return None, 0
    with tempfile.TemporaryDirectory(prefix="plugkit-bundle-") as tmp:
        path = os.path.join(tmp, "base.bundle")
        done = _git(worktree, "bundle", "create", "-q", path, branch, "--not", *known)
        if done.rc != 0:
            raise RuntimeError(f"git bundle of {branch}: {done.err.decode(errors='replace').strip()[-300:]}")
        with open(path, "rb") as fh:
            return fh.read(), count


# `git worktree add` (the engine starting another item, or the person) writes a placeholder
# HEAD of zeros for a moment; a fetch that walks every worktree's HEAD then fails on it.
PLACEHOLDER_HEAD = re.compile(r"bad object worktrees/[^/\s]+/HEAD")
PLACEHOLDER_WAIT_S = 5.0


def _land_locally(worktree: str, branch: str, data: bytes) -> None:
    """The node's commits onto the item's branch here: its ref only. Nothing is checked out (the
    runner checks a fresh checkout of the branch's commit), so no file of the worker's is written
    here by a git that would apply the attributes and filters its commits name."""
    with tempfile.TemporaryDirectory(prefix="plugkit-bundle-") as tmp:
        path = os.path.join(tmp, "back.bundle")
        with open(path, "wb") as fh:
            fh.write(data)
        for args in (["fetch", "-q", path, f"refs/heads/{branch}"],
                     ["update-ref", f"refs/heads/{branch}", "FETCH_HEAD"]):
            deadline, pause = time.monotonic() + PLACEHOLDER_WAIT_S, 0.01
            while True:
                # fsckObjects: what a node sends is re-hashed anyway (index-pack), and checked like a push.
                done = _git(worktree, "-c", "transfer.fsckObjects=true", *args)
                said = done.err.decode(errors="replace")
                if done.rc == 0:
                    break
                if not PLACEHOLDER_HEAD.search(said) or time.monotonic() > deadline:
                    raise RuntimeError(f"git {args[0]} of the node's commits: {said.strip()[-300:]}")
                time.sleep(pause)
                pause = min(pause * 2, 0.5)


class Recorder:
    """The attempt's Record, kept in the file RayPlacement.seen reads: rewritten whole on every
    change (os.replace), so the runner never reads half of one."""

    def __init__(self, path: str) -> None:
        self.path, self.now = path, Record()

    def __call__(self, **fields) -> None:
        self.now = Record.model_validate({**self.now.model_dump(), **fields})
        tmp = self.path + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(self.now.model_dump_json())
        os.replace(tmp, self.path)


def read_spec(path: str) -> DriverSpec:
    """The runner's spec (Malformed, OSError), and its file gone: it holds the worker's scoped
    environment, read once."""
    try:
        with open(path) as fh:
            return msg.parse(DriverSpec, fh.read(), "spec from the runner")
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


def _attempt(spec: DriverSpec) -> NodeAttempt:
    """What the node is sent: the attempt, the commit it starts from, and the project's committer
    identity (a bundle carries no config, so the worker commits on the node as it would here)."""
    def ask(*args: str) -> str:
        return git.run_sync(spec.local_worktree, *args, timeout=60).out.decode(errors="replace").strip()

    base = ask("rev-parse", "--verify", "-q", "HEAD")
    return NodeAttempt(**spec.model_dump(exclude={"cluster", "record", "gateway"}), base=base,
                       identity=msg.Identity(name=ask("config", "user.name"), email=ask("config", "user.email")))


class Cancel:
    """The attempt's way out when its driver (the runner's task) went away: its Ray task
    cancelled with force, which kills the worker's Ray process on the node (and the node's runner,
    watching that process through a pidfd, kills the worker's task with it)."""

    def __init__(self) -> None:
        self.lock, self.gen, self.gone = threading.Lock(), None, False

    def submitted(self, gen) -> None:
        with self.lock:
            self.gen = gen
            gone = self.gone
        if gone:
            self._cancel(gen)

    def answered(self) -> None:
        """The attempt's code is with its driver, which may go now: its Ray task is not cancelled
        any more (the node tidies up in its worker process, which then stays warm)."""
        with self.lock:
            self.gen, self.gone = None, True

    def driver_gone(self) -> None:
        with self.lock:
            self.gone, gen = True, self.gen
        if gen is not None:
            self._cancel(gen)

    @staticmethod
    def _cancel(gen) -> None:
        import ray

        try:
            ray.cancel(gen, force=True)
        except Exception:  # noqa: BLE001 - an attempt that already ended has nothing to cancel
            pass


def place(spec: DriverSpec, nodes: choice.Nodes, say: Say, cancel: Cancel, answer: Callable[[int], None]) -> int:
    """The attempt run on a node to its end: the worker's exit code, or one of the node RCs (given
    to `answer` as soon as known, before the node's tidy-up ends)."""
    import ray
    from ray import exceptions as rex
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    began = time.monotonic()

    def tell(text: str) -> None:  # each line says when, from the gateway's receipt of the attempt
        say(f"[plugkit ray] {text} [+{time.monotonic() - began:.2f} s]\n".encode())

    record = Recorder(spec.record)
    try:
        attempt = _attempt(spec)
    except (OSError, git.GitTimeout, msg.Malformed) as exc:  # no HEAD to start from: nothing to send
        tell(f"the item's worktree {spec.local_worktree}: {exc}")
        return CLUSTER_RC
    lost = (rex.NodeDiedError, rex.WorkerCrashedError, rex.ObjectLostError, rex.OwnerDiedError,
            rex.LocalRayletDiedError, rex.RaySystemError, rex.TaskUnschedulableError)
    try:
        # Only a node that proved it is ours is a candidate; the freest of them takes the attempt,
        # pinned, so the bundle holds only the commits that node's clone cache lacks.
        node = nodes.claim(record)
    except RuntimeError as exc:  # no proven node
        tell(str(exc))
        return CLUSTER_RC
    held = None  # what the node's clone holds after this attempt, once it ended there as it should
    try:
        pinned = NodeAffinitySchedulingStrategy(node, soft=False)
        have = nodes.held(node, spec.repo_key)
        if have is None:  # the gateway's first attempt of this project there
            have = msg.parse(msg.Have, ray.get(ray.remote(_cached).options(
                num_cpus=0, max_retries=0, scheduling_strategy=pinned).remote(spec.repo_key)),
                "list of the node's commits")
        tip = _git(spec.local_worktree, "rev-parse", "--verify", "-q", spec.branch).out.decode().strip()
        bundle, count = _bundle(spec.local_worktree, spec.branch, have)
        tell(f"placed on node {node[:12]}: {count} commit(s) sent, {len(have)} ref(s) already there")
        short = nodes.short.get(node)
        if short:
            tell(f"node {node[:12]}: {short}")
        remote = ray.remote(_on_node).options(
            resources={"plugkit_worker": 1}, num_cpus=0, max_retries=0, num_returns="streaming",
            name=f"plugkit-{spec.session}", scheduling_strategy=pinned)
        gen = remote.remote(None if bundle is None else ray.put(bundle), attempt.model_dump())
        cancel.submitted(gen)
        record(ray_task=gen.completed().task_id().hex())
        rc, ended = _follow(spec, gen, record, tell, say)
        if rc == NODE_LOST_RC:
            nodes.forget(node)
        if ended:  # fetched there: the next bundle leaves its commits out
            held = [t for t in (tip, *have) if t] if bundle is not None else have
            cancel.answered()
            answer(rc)
            _drain(gen)  # its worktree and branch out of the node's clone; its worker process kept
        return rc
    except lost as exc:
        tell(f"node lost: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
        nodes.forget(node)
        return NODE_LOST_RC
    except rex.TaskCancelledError:
        return NODE_LOST_RC  # its driver is gone: nobody reads this code
    except rex.RayTaskError as exc:
        if isinstance(exc.cause, lost):  # the node went away under the task: Ray wraps that too
            tell(f"node lost: {type(exc.cause).__name__}: {str(exc.cause).splitlines()[0][:300]}")
            nodes.forget(node)
            return NODE_LOST_RC
        tell(f"the attempt failed on its node: {str(exc).splitlines()[-1][:300]}")
        return 1
    except (RuntimeError, msg.Malformed) as exc:  # git failing here, a malformed answer, a failed landing
        tell(str(exc))
        return 1
    finally:
        nodes.holds(node, spec.repo_key, held)
        nodes.release(node)


def _follow(spec: DriverSpec, gen, record: Recorder, tell: Callable[[str], None], say: Say) -> tuple[int, bool]:
    """The attempt's events to its end: (the code to answer, whether it ended as it should there)."""
    import ray

    for ref in gen:
        said = msg.event(ray.get(ref))
        if isinstance(said, msg.Out):
            say(said.data)
        elif isinstance(said, msg.Beat):  # the worker's hook calls, answered by its node's runner: its heartbeat here
            record(beats=said.beats)
        elif isinstance(said, msg.Refused):  # its calls refused on the node: kept on its item here, as locally
            record(refused=[*record.now.refused, *said.calls])
        elif isinstance(said, msg.At):
            record(node=said.node, node_ip=said.ip, node_dir=said.dir)
            tell(f"on node {said.node[:12]} ({said.ip}), in its Ray worker process {said.pid}")
        elif isinstance(said, msg.Lost):  # its node's runner died or restarted under it: placed again, not stalled
            tell(f"node lost: {said.why}")
            return NODE_LOST_RC, False
        elif isinstance(said, msg.BadObjects):  # the node refused what the worker wrote: held here, as locally
            record(bad_objects=said.why)
            tell(said.why)
            return BAD_OBJECTS_RC, True
        elif isinstance(said, msg.Done):
            tell(f"the worker ended on its node (code {said.rc}); "
                 + (f"its commits back ({len(said.bundle)} bytes)" if said.bundle else "no new commits"))
            if said.bundle:
                _land_locally(spec.local_worktree, spec.branch, said.bundle)
                tell(f"its commits are on {spec.branch} here")
            return said.rc, True
    tell("node lost: the stream ended before the attempt did")
    return NODE_LOST_RC, False


def _drain(gen) -> None:
    """The rest of the node task's stream: dropped unread, Ray would end the task (and kill its
    worker process: no warm process there for the next attempt) before its tidy-up ran."""
    import ray

    try:
        for ref in gen:
            ray.get(ref)
    except Exception:  # noqa: BLE001 - the attempt's answer is given; a tidy-up failing is the node's to sweep
        pass


def _cached(repo_key: str) -> list[str]:
    from runner.node import clone

    return clone.have(repo_key)


def _on_node(bundle: Optional[bytes], spec: dict):  # a NodeAttempt's data: the node checks it
    import ray

    from runner.node import task

    ctx = ray.get_runtime_context()
    yield from task.attempt(bundle, spec, ctx.get_node_id(), ray.util.get_node_ip_address())
