"""A node's clone cache of each project: one bare repository per project under the node's
directory (objects a node already has stay between attempts), each attempt's directory and
worktree in it, and what abandoned attempts left behind swept away.

Every change to a clone's refs or worktrees is made under its lock: attempts placed on one node
share the clone. Standard library and plugkit's kernel only (the Ray worker process imports it).
"""

import hashlib
import os
import shutil
import tempfile
import time

from runner.system import git as system_git
from runner.system.subreaper import start_ticks
from plugkit import locks

NODE_DIR_VAR = "PLUGKIT_NODE_DIR"
OWNER_FILE = "owner"  # in an attempt's directory: "<pid> <start ticks>" of the Ray worker process running it
STALE_S = 600.0  # an attempt's directory with no owner file yet is taken as abandoned after this

def node_dir() -> str:
    return os.environ.get(NODE_DIR_VAR) or os.path.join(os.path.expanduser("~"), ".cache", "plugkit-node")


def git(cwd: str, *args: str, data: bytes | None = None) -> bytes:
    """git's output, through the runner's one git adapter (runner.system.git: its environment
    rule, its process group); RuntimeError naming git's own reason when it fails."""
    done = system_git.run_sync(cwd, *args, input=data, timeout=300)
    if done.rc != 0:
        raise RuntimeError(f"git {' '.join(args[:2])}: {done.err.decode(errors='replace').strip()[-300:]}")
    return done.out


def config(cwd: str, key: str, value: str) -> None:
    """A setting of the clone's one config file, written only when it differs: once set, no
    attempt takes config.lock for it again (seen once under load: a config.lock in the clone
    failed an item's two attempts on that node, each at its `git config gc.auto`)."""
    if system_git.run_sync(cwd, "config", "--get", key, timeout=60).out.decode().strip() != value:
        git(cwd, "config", key, value)


def cache_dir(root: str, repo_key: str) -> str:
    return os.path.join(root, "clones", hashlib.sha256(repo_key.encode()).hexdigest()[:16] + ".git")


def have(repo_key: str, limit: int = 64) -> list[str]:
    """The commits this node's clone of the project holds refs to, newest first: what the
    supervisor need not send again."""
    cache = cache_dir(node_dir(), repo_key)
    if not os.path.isdir(cache):
        return []
    out = git(cache, "for-each-ref", "--sort=-committerdate", f"--count={limit}", "--format=%(objectname)",
               "refs/plugkit-in/")
    return out.decode().split()


def lock(cache: str):
    """The node's lock on one project's clone: every change to its refs or worktrees is made
    under it. `git worktree add` writes a placeholder HEAD (all zeros) before the real one, and
    a fetch or a prune by another attempt that sees it fails on a bad object."""
    return locks.file_lock(cache + ".lock")


def _fetch(cache: str, bundle: bytes | None, branch: str, tmp: str) -> None:
    """The node's clone of the project (made if new), with the bundle's commits fetched in (the
    caller holds its lock: two attempts on one node share it). Each fetched tip is kept under
    refs/plugkit-in/<sha>, so the objects stay and the next attempt's bundle leaves them out."""
    if not os.path.isdir(cache):
        git(os.path.dirname(cache), "init", "-q", "--bare", cache)
    # No automatic gc: a worker's commit would start one outside the lock, racing the other
    # attempts' worktrees (set on every attempt: a clone made by an older plugkit has it too).
    config(cache, "gc.auto", "0")
    if bundle is None:  # the node had every commit already
        return
    path = os.path.join(tmp, "in.bundle")
    with open(path, "wb") as fh:
        fh.write(bundle)
    git(cache, "fetch", "-q", path, f"refs/heads/{branch}")
    tip = git(cache, "rev-parse", "FETCH_HEAD").decode().strip()
    git(cache, "update-ref", f"refs/plugkit-in/{tip}", tip)


def begin(root: str) -> str:
    """A new attempt's directory under the node's tmp, marked with its owner (this Ray worker
    process: pid and start time, so a recycled pid is not taken for it)."""
    tmp = tempfile.mkdtemp(prefix="attempt-", dir=made(os.path.join(root, "tmp")))
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
    git(cache, "worktree", "prune")


def checkout(root: str, repo_key: str, branch: str, base: str, bundle: bytes | None, tmp: str) -> tuple[str, str]:
    """The project's clone on this node with the bundle fetched in, and the attempt's worktree
    (tmp/wt) on its branch from `base`: (cache, worktree)."""
    cache = cache_dir(root, repo_key)
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    wt = os.path.join(tmp, "wt")
    with lock(cache):
        _fetch(cache, bundle, branch, tmp)
        _sweep(root, cache)
        git(cache, "worktree", "add", "-q", "--detach", wt, base)
    git(wt, "checkout", "-q", "-B", branch)
    return cache, wt


def made(path: str) -> str:
    os.makedirs(path, exist_ok=True)
    return path


def tidy(cache: str, wt: str, tmp: str, branch: str) -> None:
    """The attempt's worktree, its registration and its branch out of the clone, and its directory gone."""
    if os.path.isdir(cache):
        with lock(cache):
            # --force twice: a `locked` file the worker made in its admin dir does not keep its branch here
            for args in (("worktree", "remove", "--force", "--force", wt), ("worktree", "prune"),
                         ("branch", "-D", branch)):
                try:
                    git(cache, *args)
                except (RuntimeError, OSError, system_git.GitTimeout):
                    pass
    shutil.rmtree(tmp, ignore_errors=True)

