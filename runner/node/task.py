"""The node side of a remote attempt: what one Ray task does on the node it was placed on.

Receives the item branch's history as a git bundle (through Ray's object store), fetches it
into a node-local clone cache (one bare repo per project under the node's directory, so git
objects a node already has stay there between attempts), makes the worktree there, runs the
worker in its own process group and yields as it goes (plugkit/protocol/node.py's NodeEvent, as
plain data): At once, Out per chunk of output, Beat when the worker made hook calls since the last
one (how many so far), Refused for its calls the capability was refused on the node, then Done
(exit code, thin bundle of the new commits or None), preceded by BadObjects when the worker wrote
an object that may not enter the clone (nothing travels back then); or Lost when the node's
runner hosting the attempt died or restarted under it.

A generator task (num_returns="streaming") rather than an actor or a queue: the output reaches
the supervisor in order as it is produced, there is no second Ray object to own, leak or
restart, and cancelling the one task (ray.cancel) ends the stream.

Nothing of the supervisor's $PLUGKIT_HOME travels: the worker gets the scoped environment the
supervisor built and PLUGKIT_HOME is set to the node's own home, so a `plugkit` call the worker
makes reaches the node's runner, never the supervisor's. That runner hosts the attempt
(hosting.py, work.host): it answers the worker as a local runner answers its own worker,
and the worker holds a capability scoped to its item, not that runner's token.

Standard library and plugkit's kernel only (Ray is the caller's): the Ray worker process imports
this module by name, so the node needs the same plugkit installed (`plugkit doctor` checks).
"""

import os
import select
import signal
import subprocess
import sys
import time

from plugkit.protocol import node as msg
from plugkit.protocol.node import NodeAttempt
from plugkit.vocab import HOME_TAG, SANDBOXED_TAG, SESSION_ID_TAG
from plugkit.work.cluster import NEVER_TRAVELS
from runner.node import hosting, keeper
from runner.node.clone import begin, cache_dir, checkout, git, lock, made, node_dir, tidy
from runner.system import worker_objects, worker_refs

PORT_VAR = hosting.PORT_VAR  # the node runner's port: set on `ray start`, else chosen for the node
RUNNER_MISSES = 2  # polls in a row its runner did not answer for the attempt: gone or restarted
CHUNK = 64 << 10
BEAT_POLL_S = 3.0  # how often the node's runner is asked for the worker's hook calls (the heartbeat)

def _kill(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


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
                    git(wt, "config", key, value)
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
        hosted = hosting.host(home, wt, spec, env)
        yield msg.Out(data=f"[plugkit ray] hosted by the node's runner ({'its relay, ' if hosted.relay else ''}"
                           "the worker policy, its Stop check, its own capability)\n".encode()).model_dump()
        if spec.install:
            _hooks(cache, wt, spec, env)
        if spec.sandbox:  # as on the supervisor's machine: fails closed, bwrap or no worker
            from runner.system import netrelay, sandbox

            box = made(os.path.join(tmp, "box"))
            relay, extra = hosted.relay, ()
            if relay:  # --network loopback-model: the node's runner holds the relay's outside half
                argv, extra = netrelay.wrap(relay.folder, relay.ports, argv), netrelay.namespace_args(relay.folder)
            argv = sandbox.argv(sandbox.layout(wt, home, env, box), spec.kind, argv,
                                capability=hosted.capability, extra=extra)
            # As the runner's worker executor does: the node's runner is in another PID namespace, so
            # the worker's client checks it by /health alone.
            env.update(TMPDIR=box, **{SANDBOXED_TAG: "1"})
        yield from _supervise(argv, wt, env, spec, home, tmp, cache)
    finally:
        hosting.unhost(home, spec.session)  # its capability revoked, its hook calls no longer its
        tidy(cache, wt, tmp, branch)


def _supervise(argv: list[str], wt: str, env: dict[str, str], spec: NodeAttempt, home: str, tmp: str, cache: str):
    """The worker, run to its end: its output and its heartbeats (the hook calls the node's runner
    answered for it, polled every BEAT_POLL_S) as they come, then its exit and its commits: read
    from the clone's ref of its branch, never through its worktree (whose git state is the worker's)."""
    child = keeper.spawn(argv, wt, env)
    try:
        try:
            child.stdin.write(spec.stdin.replace(spec.local_worktree, wt).encode())
            child.stdin.close()
        except BrokenPipeError:
            pass
        fd = child.stdout.fileno()
        polled, relayed, misses = time.monotonic(), {"beats": 0, "refusals": 0}, 0
        while True:
            ready, _, _ = select.select([fd], [], [], 1.0)
            if ready:
                data = os.read(fd, CHUNK)
                if not data:
                    break
                yield msg.Out(data=data).model_dump()
            if time.monotonic() - polled >= BEAT_POLL_S:
                polled = time.monotonic()
                found = _news(home, spec.session, relayed)
                misses = 0 if found is not None else misses + 1
                if misses >= RUNNER_MISSES:  # killed -9 or restarted: its hosting (the worker's hooks) is gone
                    yield msg.Lost(why="the node's runner no longer hosts the attempt (killed or restarted)").model_dump()
                    return
                for news in found or []:  # no `yield from` a list: Ray resumes with send()
                    yield news
        rc = child.wait()
        for news in _news(home, spec.session, relayed) or []:  # what came after the last look
            yield news
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
    finally:
        if child.poll() is None:
            _kill(child)
        else:  # what the worker left running in its group goes with it, as it does locally
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _news(home: str, session: str, relayed: dict[str, int]) -> list[dict] | None:
    """What the node's runner heard of the worker since `relayed` (updated): a Beat when it made
    hook calls, and a Refused for the calls its capability was refused there (None: that runner
    did not answer, or no longer hosts the session)."""
    heard = hosting.heard(home, session)
    if heard is None:
        return None
    news: list[dict] = []
    if heard.beats > relayed["beats"]:
        relayed["beats"] = heard.beats
        news.append(msg.Beat(beats=heard.beats).model_dump())
    new = heard.refusals - relayed["refusals"]
    if new > 0:
        relayed["refusals"] = heard.refusals
        news.append(msg.Refused(calls=heard.refused[-new:]).model_dump())
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

