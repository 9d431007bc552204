"""The runner's one way to run git: every git the runner starts (plugkit work's worktrees and
landings, the gates' status and weakening checks, search) goes through run() or out(), or
run_sync(), its blocking face (search's threads, the Ray driver and node side), under one
environment rule, and every worktree it adds or removes goes through one registry per repository.

The rule: a hook that calls the runner may carry variables that point git at another repository
or index (GIT_DIR, GIT_INDEX_FILE, ...; `git rev-parse --local-env-vars` lists the family): they
are dropped, so `cwd` alone says which repository. git never prompts (no terminal), never opens an
editor, speaks C-locale messages (callers read its stderr), and takes no optional lock (a status
check must not take `index.lock` from under an agent's own git). It runs in its own process
group, killed whole on a timeout or a cancellation: a hook or alias git started dies with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass

from runner.system import git_planted, logs

log = logs.get("plugkit.git")

TIMEOUT_S = 120.0
REPO_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
            "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_PREFIX", "GIT_NAMESPACE", "GIT_IMPLICIT_WORK_TREE")
QUIET_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_EDITOR": "true", "GIT_SEQUENCE_EDITOR": "true",
             "GIT_MERGE_AUTOEDIT": "no", "GIT_OPTIONAL_LOCKS": "0"}


# Every git the runner starts runs none of the programs git can be told to run from a config it
# reads: no hooks (a hooksPath the person aimed into the tree, husky-style, would run what a worker
# committed; `worktree add` runs post-checkout), no fsmonitor (`ls-files` and `status` run it: a
# worker's nested repository named one and search ran it outside the sandbox), no ssh command, no
# gpg for a log.showSignature. With the worker's config.worktree and .git file read-only in its
# sandbox (runner/system/sandbox.py), this is the second line for its worktree, and the only one
# for a repository a worker made inside it. (Diffs: --no-ext-diff --no-textconv where they read
# content.)
SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.sshCommand=false",
        "-c", "core.untrackedCache=false", "-c", "log.showSignature=false")


class GitTimeout(Exception):
    """git ran past its timeout and was killed with its process group."""


class NotOurs(PermissionError):
    """cwd is inside a repository a sandboxed worker made in its worktree: its config is the
    worker's (filters, fsmonitor, aliases), so the runner runs no git there."""


# Where `plugkit work` puts a worker's worktree (runner/core/work/attempt.py): <root>/.plugkit/worktrees/<id>.
_WORKTREES = os.sep + os.path.join(".plugkit", "worktrees") + os.sep


def sandbox_made(cwd: str) -> str | None:
    """The repository a sandboxed worker made that holds cwd, else None: a directory with a .git
    below a worker's worktree root (the worktree's own .git file is the runner's, read-only to it).
    A filesystem walk of a few levels, no git: it runs before every git the runner starts."""
    real = os.path.realpath(cwd)
    at = real.find(_WORKTREES)
    if at < 0:
        return None
    rest = real[at + len(_WORKTREES):].split(os.sep)
    top = real[:at + len(_WORKTREES)] + rest[0]
    probe = real
    while len(probe) > len(top):
        if os.path.lexists(os.path.join(probe, ".git")):
            return probe
        probe = os.path.dirname(probe)
    return None


def _refuse_sandbox_made(cwd: str, args: tuple[str, ...] = ()) -> None:
    made = sandbox_made(cwd)
    if made is not None:
        raise NotOurs(f"{made} is a repository a sandboxed worker made inside its worktree: the runner runs "
                      "no git there (its config is the worker's); run git in the worktree itself")
    try:
        removed = git_planted.sweep(cwd, _command(args))
    except git_planted.Unswept as e:
        raise NotOurs(f"{e} in a worker's worktree admin dir could not be looked through or removed (a link, a "
                      "FIFO or a flood its sandbox left): the runner runs no git that would read it; remove "
                      "it by hand") from None
    if removed:
        log.warning("git_admin_planted_removed", cwd=cwd, removed=removed[:10])


def _command(args: tuple[str, ...]) -> tuple[str, ...]:
    """ARGS from git's subcommand on (its global options before it dropped)."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c") else 1
    return args[i:]


class GitError(Exception):
    """A git step failed; the message is one line: what failed and what a person does next."""

    def __init__(self, message: str) -> None:  # one line, whatever git or a subject put in it
        super().__init__(" ".join(message.split()))


@dataclass(frozen=True)
class Done:
    rc: int
    out: bytes
    err: bytes


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in REPO_ENV}
    env.update(QUIET_ENV)
    return env


async def run(cwd: str, *args: str, input: bytes | None = None, timeout: float = TIMEOUT_S) -> Done:
    """git ARGS (under SAFE) in cwd. Raises OSError when git cannot start (not installed, cwd
    missing; NotOurs where a worker made the repository) and GitTimeout past `timeout` seconds."""
    _refuse_sandbox_made(cwd, args)
    proc = await asyncio.create_subprocess_exec(
        "git", *SAFE, *args, cwd=cwd, env=environment(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = await asyncio.wait_for(proc.communicate(input), timeout)
    except BaseException as e:  # timeout or cancellation: the git process must not outlive us
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
        if isinstance(e, asyncio.TimeoutError):
            raise GitTimeout(f"git {args[0] if args else ''} took over {timeout:.0f} s") from None
        raise
    return Done(proc.returncode or 0, out, err)


def run_sync(cwd: str, *args: str, input: bytes | None = None, timeout: float = TIMEOUT_S) -> Done:
    """run()'s synchronous face, for code already on a worker thread (search's indexer): the same
    environment rule and SAFE, its process group killed on the timeout. Raises as run() does."""
    _refuse_sandbox_made(cwd, args)
    with subprocess.Popen(["git", *SAFE, *args], cwd=cwd, env=environment(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, start_new_session=True,
                          stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except BaseException as e:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if isinstance(e, subprocess.TimeoutExpired):
                raise GitTimeout(f"git {args[0] if args else ''} took over {timeout:.0f} s") from None
            raise
    return Done(proc.returncode or 0, out, err)


def why(err: str) -> str:
    """git's own reason, one line: its fatal:/error: line, else its first."""
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    picked = next((ln for ln in lines if ln.startswith(("fatal:", "error:"))), lines[0] if lines else "")
    return picked[:240] or "no message"


async def safe(cwd: str, *args: str, input: bytes | None = None, timeout: float = TIMEOUT_S) -> Done:
    """git ARGS; a git that cannot start or runs too long is a GitError naming the fix."""
    try:
        return await run(cwd, *args, input=input, timeout=timeout)
    except NotOurs as e:
        raise GitError(str(e)) from e
    except OSError as e:  # no git on PATH, or cwd missing
        raise GitError(f"cannot run git in {cwd}: {e.strerror}; install git or check the path") from e
    except GitTimeout:
        raise GitError(f"git {args[0]} took over {timeout:.0f} s in {cwd} (a lock or a hook "
                       f"hanging?); run `git -C {cwd} {' '.join(args)}` by hand") from None


async def out(cwd: str, *args: str, check: bool = True, input: bytes | None = None,
              timeout: float | None = None) -> str:
    """git's stdout as text (not stripped: `show` gives a file's bytes); a failure is a GitError
    with git's reason, unless check=False."""
    done = await safe(cwd, *args, input=input, timeout=TIMEOUT_S if timeout is None else timeout)
    if done.rc and check:
        raise GitError(f"git {' '.join(args[:2])} failed in {cwd}: {why(done.err.decode(errors='replace'))}"
                       f" (run `git -C {cwd} {' '.join(args)}` to see it whole)")
    return done.out.decode(errors="replace")


# One repository's worktree registrations change one at a time: two `worktree add` at once read
# each other's half-made admin dir ("failed to read .git/worktrees/<n>/commondir"), and a
# `worktree prune` deletes an admin dir another `add` has made but not yet locked. Every add,
# remove and prune the runner does (work's worktrees and checkouts, the gates' collections) holds
# its repository's lock.
_REGISTRY_LOCKS: dict[str, asyncio.Lock] = {}


def registry(root: str) -> asyncio.Lock:
    return _REGISTRY_LOCKS.setdefault(os.path.realpath(root), asyncio.Lock())


async def registered(root: str, path: str) -> bool:
    listing = await out(root, "worktree", "list", "--porcelain")
    real = os.path.realpath(path)
    return any(os.path.realpath(ln[9:]) == real for ln in listing.splitlines() if ln.startswith("worktree "))


async def unregister(root: str, path: str) -> None:
    """Remove the worktree at `path` (edits in it dropped) and prune; the caller holds registry(root)."""
    if os.path.exists(path) and await registered(root, path):
        await out(root, "worktree", "remove", "--force", "--force", path)  # twice: even if locked
        return  # its registration went with it: no prune (one git less per checkout, under the lock)
    await out(root, "worktree", "prune")


async def checkout(root: str, path: str, sha: str) -> None:
    """A fresh runner-owned checkout of `sha` at `path` (a detached worktree of `root`, made anew:
    whatever was there before goes): exactly the committed tree, nothing beside it."""
    async with registry(root):
        await unregister(root, path)
        if os.path.lexists(path):  # a directory a crash left unregistered
            await asyncio.to_thread(shutil.rmtree, path, True)
        await out(root, "worktree", "add", "-q", "--detach", path, sha)


async def drop(root: str, path: str) -> None:
    """The worktree at `path` removed, registration and files; missing: no-op."""
    async with registry(root):
        await unregister(root, path)
    if os.path.lexists(path):
        await asyncio.to_thread(shutil.rmtree, path, True)
