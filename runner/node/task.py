"""The node side of a remote attempt: what one Ray task does on the node it was placed on.

Receives the item branch's history as a git bundle (through Ray's object store), fetches it
into a node-local clone cache (one bare repo per project under the node's directory, so git
objects a node already has stay there between attempts), makes the worktree there, has the
node's own runner run the worker as its task (work.run) and yields as it goes
(plugkit/protocol/node.py's NodeEvent, as plain data): At once, Out per chunk of output, Beat
when the worker made hook calls since the last one (how many so far), Refused for its calls the
capability was refused on the node, then Done (exit code, thin bundle of the new commits or
None), preceded by BadObjects when the worker wrote an object that may not enter the clone
(nothing travels back then); or Lost when the node's
runner running the attempt died or restarted under it.

One supervisor of the worker process on the node: its runner, as for a local worker (the
sandbox, the capability, the relay, the cgroup and the kill of the worker's whole tree, the
task in its ledger and `exec:tasks`). No guard process: the runner holds a pidfd of this Ray
worker process and kills the task when it ends (a force cancel, the raylet killing it); a plain
ray.cancel raises in this generator, whose `finally` has the runner end the task (work.unhost).

A generator task (num_returns="streaming") rather than an actor or a queue: the output reaches
the supervisor in order as it is produced, there is no second Ray object to own, leak or
restart, and cancelling the one task (ray.cancel) ends the stream.

Nothing of the supervisor's $PLUGKIT_HOME travels: the worker gets the scoped environment the
supervisor built and PLUGKIT_HOME is set to the node's own home, so a `plugkit` call the worker
makes reaches the node's runner, never the supervisor's. That runner hosts the attempt
(hosting.py, work.run): it answers the worker as a local runner answers its own worker,
and the worker holds a capability scoped to its item, not that runner's token.

Standard library and plugkit's kernel only (Ray is the caller's): the Ray worker process imports
this module by name, so the node needs the same plugkit installed (`plugkit doctor` checks).
"""

import os
import subprocess
import sys
import time

from plugkit.protocol import node as msg
from plugkit.protocol.node import NodeAttempt
from plugkit.protocol.work_host import WorkRead
from plugkit.vocab import HOME_TAG, SESSION_ID_TAG
from plugkit.work.cluster import NEVER_TRAVELS
from runner.node import hosting
from runner.node.clone import begin, cache_dir, checkout, config, git, lock, made, node_dir, tidy
from runner.system import worker_objects, worker_refs

PORT_VAR = hosting.PORT_VAR  # the node runner's port: set on `ray start`, else chosen for the node
RUNNER_MISSES = 2  # reads in a row its runner did not answer for the attempt: gone or restarted
READ_WAIT_S = 2.0  # how long one work.read waits for news: a quiet worker's heartbeat still comes this often


def attempt(bundle: bytes | None, raw: dict, node_id: str, node_ip: str):
    """Generator run as the Ray task: `raw` is the driver's NodeAttempt, checked here before
    anything is made of it; each event yielded is a NodeEvent's data."""
    spec = msg.parse(NodeAttempt, raw, "attempt from the driver")
    root = node_dir()
    yield msg.At(node=node_id, ip=node_ip, dir=root, pid=os.getpid()).model_dump()
    tmp = begin(root)
    cache, wt, branch = cache_dir(root, spec.repo_key), os.path.join(tmp, "wt"), spec.branch
    home = made(os.path.join(root, "home"))
    try:  # whatever fails from here, the attempt's directory and worktree go (tidy)
        checkout(root, spec.repo_key, spec.branch, spec.base, bundle, tmp)
        # As locally: the clone's store is never writable from the sandbox; the worker's objects go
        # to its own dir and enter the clone only once checked (runner/system/worker_objects.py).
        worker_objects.prepare(wt, cache)
        worker_refs.prepare(wt, cache, branch)  # its branch in its own refs dir: none of the clone's shared
        with lock(cache):  # the clone's one config file: two attempts starting on one node raced on its lock
            for key, value in (("user.name", spec.identity.name), ("user.email", spec.identity.email)):
                if value:
                    config(wt, key, value)
        # The prompt and argv name the supervisor's worktree: on this node the worker's is here.
        argv = [a.replace(spec.local_worktree, wt) for a in spec.argv]
        env = {k: v for k, v in spec.env.items() if k not in NEVER_TRAVELS}
        # The session tag, as a local worker task carries it (a host keys its attempt by it).
        env.update({HOME_TAG: home, SESSION_ID_TAG: spec.session, "PWD": wt})
        # The node's runner hosts the attempt: it answers the worker's hooks and exec: calls as a
        # local runner answers its own worker's (the policy, the commit check), and mints the
        # capability its sandbox shows at the token's path, never that runner's token. Its port is
        # the node's own, never the machine-wide default: another user's node (or runner) on this
        # machine holds that one, and each would refuse the other's token.
        env[PORT_VAR] = hosting.start(home, wt, root)
        if spec.install:
            _hooks(cache, wt, spec, env)
        # The node's runner runs the worker as its task, through the worker executor a local
        # worker runs by: its sandbox (fails closed), its relay, the capability its sandbox shows
        # at the token's path (never that runner's token), its cgroup, the kill of its tree.
        running = hosting.run(home, wt, spec, env, argv, spec.stdin.replace(spec.local_worktree, wt))
        yield msg.Out(data=f"[plugkit ray] hosted by the node's runner as its task_{running.task_id} (its sandbox, "
                           "the worker policy, its Stop check, its own capability)\n".encode()).model_dump()
        yield from _follow(home, spec, tmp, cache, wt)
    finally:
        hosting.unhost(home, spec.session)  # its capability revoked, its hook calls no longer its
        tidy(cache, wt, tmp, branch)


def _follow(home: str, spec: NodeAttempt, tmp: str, cache: str, wt: str):
    """The worker, followed to its end through the node's runner: its output, its heartbeats and
    refusals, read together by cursor (work.read waits for news: one loop, no poll of its own),
    then its exit and its commits: read from the clone's ref of its branch, never through its
    worktree (whose git state is the worker's)."""
    cursor, relayed, misses, got = 0, {"beats": 0, "refusals": 0}, 0, None
    while got is None or not got.ended:
        got = hosting.read(home, spec.session, cursor, READ_WAIT_S)
        if got is None:
            misses += 1
            if misses >= RUNNER_MISSES:  # killed -9 or restarted: it no longer runs the worker
                _restart_runner(home, wt)
                yield msg.Lost(why="the node's runner no longer runs the attempt (killed or restarted)").model_dump()
                return
            time.sleep(READ_WAIT_S)  # it did not answer: not at once again
            continue
        misses = 0
        if got.data:
            yield msg.Out(data=got.data.encode()).model_dump()
        cursor = got.cursor
        for news in _news(got, relayed):  # no `yield from` a list: Ray resumes with send()
            yield news
    rc = got.exit_code if got.exit_code is not None else -got.signal if got.signal else 1  # -N: its signal, as Popen says
    branch = spec.branch  # read from the clone (`cache`), never from the worktree's .git file
    try:
        worker_objects.take(wt, cache)
    except worker_objects.BadObjects as exc:
        yield msg.BadObjects(why=f"{exc}; nothing of it entered the node's clone").model_dump()
        yield msg.Done(rc=rc).model_dump()
        return
    # In the clone, not the worktree: the worktree's git config is the worker's to write.
    ref = f"refs/heads/{branch}"
    found = worker_refs.read(wt, branch)  # its tip, a hash read with no link followed
    if found.tip is not None and found.tip != found.given:
        git(cache, "update-ref", "--no-deref", ref, found.tip)
    ahead = int(git(cache, "rev-list", "--count", f"{spec.base}..{ref}").strip() or 0)
    back = None
    if ahead:
        path = os.path.join(tmp, "out.bundle")
        git(cache, "bundle", "create", "-q", path, f"{spec.base}..{ref}")  # only the new commits travel back
        with open(path, "rb") as fh:
            back = fh.read()
    yield msg.Done(rc=rc, bundle=back).model_dump()


def _restart_runner(home: str, wt: str) -> None:
    """The node's runner died under the attempt: one started again reaps what the dead one left
    running (runner/system/reaper.py: its tasks are tagged with its id), the worker with it."""
    try:
        hosting.start(home, wt, node_dir())
    except (hosting.NodeRunnerError, OSError, subprocess.SubprocessError):
        pass  # the next attempt on this node starts it (and reaps) again


def _news(got: WorkRead, relayed: dict[str, int]) -> list[dict]:
    """What the node's runner heard of the worker since `relayed` (updated): a Beat when it made
    hook calls, and a Refused for the calls its capability was refused there."""
    news: list[dict] = []
    if got.beats > relayed["beats"]:
        relayed["beats"] = got.beats
        news.append(msg.Beat(beats=got.beats).model_dump())
    new = got.refusals - relayed["refusals"]
    if new > 0:
        relayed["refusals"] = got.refusals
        news.append(msg.Refused(calls=got.refused[-new:]).model_dump())
    return news


def _hooks(cache: str, wt: str, spec: NodeAttempt, env: dict[str, str]) -> None:
    """The host's hooks in the node's worktree, aimed at the node's runner, kept out of git as locally."""
    assert spec.install is not None
    if spec.hooks_file:
        exclude = os.path.join(cache, "info", "exclude")
        os.makedirs(os.path.dirname(exclude), exist_ok=True)
        line = f"/{spec.hooks_file}*\n"
        with lock(cache), open(exclude, "a+") as fh:
            fh.seek(0)
            if line not in fh.read():
                fh.write(line)
    # -P: never the worktree's own `client/` package (cwd is first on sys.path for -m otherwise)
    done = subprocess.run([sys.executable, "-P", "-m", "client.cli", *spec.install], cwd=wt, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"plugkit {' '.join(spec.install[:2])} on the node failed: "
                           f"{(done.stderr.strip().splitlines() or ['no output'])[-1][:300]}")

