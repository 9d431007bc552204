"""The node side of a remote attempt: what one Ray task does on the node it was placed on.

Receives the item branch's history as a git bundle (through Ray's object store), fetches it
into a node-local clone cache (one bare repo per project under the node's directory, so git
objects a node already has stay there between attempts), makes the worktree there, runs the
worker in its own process group and yields as it goes: ("node", ...) once, ("out", bytes) per
chunk of output, ("beat", n) when the worker made hook calls since the last one (n: how many so
far), ("refused", [...]) for its calls the capability was refused on the node, then ("done", exit code,
thin bundle of the new commits or None), preceded by ("bad_objects", why) when the worker wrote an
object that may not enter the clone (nothing travels back then); or ("lost", why) when the node's
runner hosting the attempt died or restarted under it.

A generator task (num_returns="streaming") rather than an actor or a queue: the output reaches
the supervisor in order as it is produced, there is no second Ray object to own, leak or
restart, and cancelling the one task (ray.cancel) ends the stream.

Nothing of the supervisor's $PLUGKIT_HOME travels: the worker gets the scoped environment the
supervisor built and PLUGKIT_HOME is set to the node's own home, so a `plugkit` call the worker
makes reaches the node's runner, never the supervisor's. That runner hosts the attempt
(node_runner.py, work.host): it answers the worker as a local runner answers its own worker,
and the worker holds a capability scoped to its item, not that runner's token.

Standard library and plugkit's kernel only (Ray is the caller's): the Ray worker process imports
this module by name, so the node needs the same plugkit installed (`plugkit doctor` checks).
"""

import fcntl
import hashlib
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from plugkit.vocab import HOME_TAG, SANDBOXED_TAG, SESSION_ID_TAG
from plugkit.work.cluster import NEVER_TRAVELS
from runner.core.work.placement import node_runner
from runner.system import worker_objects
from runner.system.subreaper import start_ticks

NODE_DIR_VAR = "PLUGKIT_NODE_DIR"
PORT_VAR = node_runner.PORT_VAR  # the node runner's port: set on `ray start`, else chosen for the node
RUNNER_MISSES = 2  # polls in a row its runner did not answer for the attempt: gone or restarted
CHUNK = 64 << 10
OWNER_FILE = "owner"  # in an attempt's directory: "<pid> <start ticks>" of the Ray worker process running it
STALE_S = 600.0  # an attempt's directory with no owner file yet is taken as abandoned after this
BEAT_POLL_S = 3.0  # how often the node's runner is asked for the worker's hook calls (the heartbeat)
# A small process beside the worker: when the Ray worker process dies (a force cancel, the
# supervisor's driver gone, the node's raylet killing it), it kills the worker's whole process
# group, so nothing keeps running unowned on the node.
GUARD = r"""
import os, signal, sys, time
owner, group = int(sys.argv[1]), int(sys.argv[2])
def alive(pid):
    # Not kill(pid, 0): it succeeds on a zombie, an owner that exited and is not reaped yet.
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X")
while alive(owner) and alive(group):
    time.sleep(0.2)
try:
    os.killpg(group, signal.SIGKILL)
except ProcessLookupError:
    pass
"""


# The node's git after a worker ran: no hooks, fsmonitor or ssh command (runner/core/work/git.py's rule).
SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.sshCommand=false")


def node_dir() -> str:
    return os.environ.get(NODE_DIR_VAR) or os.path.join(os.path.expanduser("~"), ".cache", "plugkit-node")


def _git(cwd: str, *args: str, data: bytes | None = None) -> bytes:
    done = subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:2])}: {done.stderr.decode(errors='replace').strip()[-300:]}")
    return done.stdout


def _cache_dir(root: str, repo_key: str) -> str:
    return os.path.join(root, "clones", hashlib.sha256(repo_key.encode()).hexdigest()[:16] + ".git")


def have(repo_key: str, limit: int = 64) -> list[str]:
    """The commits this node's clone of the project holds refs to, newest first: what the
    supervisor need not send again."""
    cache = _cache_dir(node_dir(), repo_key)
    if not os.path.isdir(cache):
        return []
    out = _git(cache, "for-each-ref", "--sort=-committerdate", f"--count={limit}", "--format=%(objectname)",
               "refs/plugkit-in/")
    return out.decode().split()


def _lock(cache: str):
    """The node's lock on one project's clone: every change to its refs or worktrees is made
    under it. `git worktree add` writes a placeholder HEAD (all zeros) before the real one, and
    a fetch or a prune by another attempt that sees it fails on a bad object."""
    lock = open(cache + ".lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def _fetch(cache: str, bundle: bytes | None, branch: str, tmp: str) -> None:
    """The node's clone of the project (made if new), with the bundle's commits fetched in (the
    caller holds its lock: two attempts on one node share it). Each fetched tip is kept under
    refs/plugkit-in/<sha>, so the objects stay and the next attempt's bundle leaves them out."""
    if not os.path.isdir(cache):
        _git(os.path.dirname(cache), "init", "-q", "--bare", cache)
    # No automatic gc: a worker's commit would start one outside the lock, racing the other
    # attempts' worktrees (set on every attempt: a clone made by an older plugkit has it too).
    _git(cache, "config", "gc.auto", "0")
    if bundle is None:  # the node had every commit already
        return
    path = os.path.join(tmp, "in.bundle")
    with open(path, "wb") as fh:
        fh.write(bundle)
    _git(cache, "fetch", "-q", path, f"refs/heads/{branch}")
    tip = _git(cache, "rev-parse", "FETCH_HEAD").decode().strip()
    _git(cache, "update-ref", f"refs/plugkit-in/{tip}", tip)


def begin(root: str) -> str:
    """A new attempt's directory under the node's tmp, marked with its owner (this Ray worker
    process: pid and start time, so a recycled pid is not taken for it)."""
    tmp = tempfile.mkdtemp(prefix="attempt-", dir=_made(os.path.join(root, "tmp")))
    with open(os.path.join(tmp, OWNER_FILE), "w") as fh:
        fh.write(f"{os.getpid()} {start_ticks(os.getpid())}")
    return tmp


def _abandoned(path: str) -> bool:
    """Whether an attempt's directory outlived its owner: a Ray worker process killed before its
    `finally` ran (a forced cancel, the node's raylet). One without an owner file yet is a new
    attempt's, unless it is older than STALE_S."""
    try:
        with open(os.path.join(path, OWNER_FILE)) as fh:
            pid_text, _, ticks = fh.read().partition(" ")
        pid = int(pid_text)
    except FileNotFoundError:
        try:
            return time.time() - os.stat(path).st_mtime > STALE_S
        except OSError:
            return False
    except (OSError, ValueError):
        return True
    # No start time now (gone, or a zombie: exited, not reaped) is a dead owner, whatever was
    # recorded: a "None" recorded from a zombie must never match the None of a dead pid.
    now = start_ticks(pid)
    return now is None or str(now) != ticks.strip()


def _sweep(root: str, cache: str) -> None:
    """What abandoned attempts left on this node goes (the caller holds the clone's lock): their
    directories (a whole checkout each), then the clone's registrations of their worktrees. A
    registration left behind holds the item's branch: from git 2.43 the item's next attempt
    here could not check it out."""
    base = os.path.join(root, "tmp")
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        path = os.path.join(base, name)
        if name.startswith("attempt-") and _abandoned(path):
            shutil.rmtree(path, ignore_errors=True)
    _git(cache, "worktree", "prune")


def checkout(root: str, spec: dict, bundle: bytes | None, tmp: str) -> tuple[str, str]:
    """The project's clone on this node with the bundle fetched in, and the attempt's worktree
    (tmp/wt) on its branch from spec["base"]: (cache, worktree)."""
    cache = _cache_dir(root, spec["repo_key"])
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    wt = os.path.join(tmp, "wt")
    with _lock(cache):
        _fetch(cache, bundle, spec["branch"], tmp)
        _sweep(root, cache)
        _git(cache, "worktree", "add", "-q", "--detach", wt, spec["base"])
    _git(wt, "checkout", "-q", "-B", spec["branch"])
    return cache, wt


def _spawn(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[subprocess.Popen, subprocess.Popen]:
    child = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True)
    guard = subprocess.Popen([sys.executable, "-c", GUARD, str(os.getpid()), str(child.pid)],
                             start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    return child, guard


def _kill(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def attempt(bundle: bytes | None, spec: dict, node_id: str, node_ip: str):
    """Generator run as the Ray task. spec: repo_key, branch, base, local_worktree, argv, stdin, env,
    session, run, item, attempt."""
    root = node_dir()
    yield ("node", node_id, node_ip, root)
    tmp = begin(root)
    cache, wt, branch = _cache_dir(root, spec["repo_key"]), os.path.join(tmp, "wt"), spec["branch"]
    home = _made(os.path.join(root, "home"))
    try:  # whatever fails from here, the attempt's directory and worktree go (tidy)
        checkout(root, spec, bundle, tmp)
        # As locally: the clone's store is never writable from the sandbox; the worker's objects go
        # to its own dir and enter the clone only once checked (runner/system/worker_objects.py).
        worker_objects.prepare(wt, cache)
        for key, value in spec.get("identity", {}).items():
            if value:
                _git(wt, "config", key, value)
        # The prompt and argv name the supervisor's worktree: on this node the worker's is here.
        local = spec["local_worktree"]
        argv = [a.replace(local, wt) for a in spec["argv"]]
        env = {k: v for k, v in spec["env"].items() if k not in NEVER_TRAVELS}
        # The session tag, as a local worker task carries it (a host keys its attempt by it).
        env.update({HOME_TAG: home, SESSION_ID_TAG: spec["session"], "PWD": wt})
        # The node's runner hosts the attempt: it answers the worker's hooks and exec: calls as a
        # local runner answers its own worker's (the policy, the commit check), and mints the
        # capability its sandbox shows at the token's path, never that runner's token. Its port is
        # the node's own, never the machine-wide default: another user's node (or runner) on this
        # machine holds that one, and each would refuse the other's token.
        env[PORT_VAR] = node_runner.start(home, wt, root)
        hosted = node_runner.host(home, wt, spec, env)
        yield ("out", f"[plugkit ray] hosted by the node's runner ({'its relay, ' if hosted.get('relay') else ''}"
                      "the worker policy, its Stop check, its own capability)\n".encode())
        if spec.get("install"):
            _hooks(cache, wt, spec, env)
        if spec.get("sandbox", True):  # as on the supervisor's machine: fails closed, bwrap or no worker
            from runner.system import netrelay, sandbox

            box = _made(os.path.join(tmp, "box"))
            relay, extra = hosted.get("relay"), ()
            if relay:  # --network loopback-model: the node's runner holds the relay's outside half
                argv, extra = netrelay.wrap(relay["folder"], relay["ports"], argv), netrelay.namespace_args(
                    relay["folder"])
            argv = sandbox.argv(sandbox.layout(wt, home, env, box), spec.get("kind", "command"), argv,
                                capability=hosted["capability"], extra=extra)
            # As the runner's worker executor does: the node's runner is in another PID namespace, so
            # the worker's client checks it by /health alone.
            env.update(TMPDIR=box, **{SANDBOXED_TAG: "1"})
        yield from _supervise(argv, wt, env, spec, home, tmp, cache)
    finally:
        node_runner.unhost(home, spec["session"])  # its capability revoked, its hook calls no longer its
        _tidy(cache, wt, tmp, branch)


def _supervise(argv: list[str], wt: str, env: dict[str, str], spec: dict, home: str, tmp: str, cache: str):
    """The worker, run to its end: its output and its heartbeats (the hook calls the node's runner
    answered for it, polled every BEAT_POLL_S) as they come, then its exit and its commits: read
    from the clone's ref of its branch, never through its worktree (whose git state is the worker's)."""
    child, guard = _spawn(argv, wt, env)
    try:
        try:
            child.stdin.write(spec["stdin"].replace(spec["local_worktree"], wt).encode())
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
                yield ("out", data)
            if time.monotonic() - polled >= BEAT_POLL_S:
                polled = time.monotonic()
                found = _news(home, spec["session"], relayed)
                misses = 0 if found is not None else misses + 1
                if misses >= RUNNER_MISSES:  # killed -9 or restarted: its hosting (the worker's hooks) is gone
                    yield ("lost", "the node's runner no longer hosts the attempt (killed or restarted)")
                    return
                for news in found or []:  # no `yield from` a list: Ray resumes with send()
                    yield news
        rc = child.wait()
        for news in _news(home, spec["session"], relayed) or []:  # what came after the last look
            yield news
        branch = spec["branch"]  # read from the clone (`cache`), never from the worktree's .git file
        try:
            worker_objects.take(wt, cache)
        except worker_objects.BadObjects as exc:
            yield ("bad_objects", f"{exc}; nothing of it entered the node's clone")
            yield ("done", rc, None)
            return
        # In the clone, not the worktree: the worktree's git config is the worker's to write.
        ref = f"refs/heads/{branch}"
        ahead = int(_git(cache, *SAFE, "rev-list", "--count", f"{spec['base']}..{ref}").strip() or 0)
        back = None
        if ahead:
            path = os.path.join(tmp, "out.bundle")
            _git(cache, *SAFE, "bundle", "create", "-q", path, f"{spec['base']}..{ref}")  # only the new commits travel back
            with open(path, "rb") as fh:
                back = fh.read()
        yield ("done", rc, back)
    finally:
        if child.poll() is None:
            _kill(child)
        else:  # what the worker left running in its group goes with it, as it does locally
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        guard.kill()
        guard.wait()


def _news(home: str, session: str, relayed: dict[str, int]) -> list[tuple] | None:
    """What the node's runner heard of the worker since `relayed` (updated): ("beat", n) when it
    made hook calls (n: how many so far; a count, not a time: the machines' clocks differ), and
    ("refused", [what, ...]) for the calls its capability was refused there."""
    heard = node_runner.heard(home, session)
    if heard is None:  # the runner did not answer, or no longer hosts the session
        return None
    news: list[tuple] = []
    if heard["beats"] > relayed["beats"]:
        relayed["beats"] = heard["beats"]
        news.append(("beat", heard["beats"]))
    new = heard["refusals"] - relayed["refusals"]
    if new > 0:
        relayed["refusals"] = heard["refusals"]
        news.append(("refused", heard["refused"][-new:]))
    return news


def _hooks(cache: str, wt: str, spec: dict, env: dict[str, str]) -> None:
    """The host's hooks in the node's worktree, aimed at the node's runner, kept out of git as locally."""
    if spec.get("hooks_file"):
        exclude = os.path.join(cache, "info", "exclude")
        os.makedirs(os.path.dirname(exclude), exist_ok=True)
        line = f"/{spec['hooks_file']}*\n"
        with _lock(cache), open(exclude, "a+") as fh:
            fh.seek(0)
            if line not in fh.read():
                fh.write(line)
    # -P: never the worktree's own `client/` package (cwd is first on sys.path for -m otherwise)
    done = subprocess.run([sys.executable, "-P", "-m", "client.cli", *spec["install"]], cwd=wt, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"plugkit {' '.join(spec['install'][:2])} on the node failed: "
                           f"{(done.stderr.strip().splitlines() or ['no output'])[-1][:300]}")


def _made(path: str) -> str:
    os.makedirs(path, exist_ok=True)
    return path


def _tidy(cache: str, wt: str, tmp: str, branch: str) -> None:
    if os.path.isdir(cache):
        with _lock(cache):
            # --force twice: a `locked` file the worker made in its admin dir does not keep its branch here
            for args in (("worktree", "remove", "--force", "--force", wt), ("worktree", "prune"),
                         ("branch", "-D", branch)):
                try:
                    _git(cache, *SAFE, *args)
                except (RuntimeError, subprocess.TimeoutExpired):
                    pass
    shutil.rmtree(tmp, ignore_errors=True)


def probe() -> dict:
    """For `doctor`: what this node runs (plugkit, python, git), and where its directory is."""
    from importlib import metadata

    try:
        version = metadata.version("plugkit")
    except metadata.PackageNotFoundError:
        version = None
    git = shutil.which("git")
    return {"plugkit": version, "python": sys.version.split()[0], "git": bool(git), "dir": node_dir(),
            "at": time.time()}
