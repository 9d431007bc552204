"""The runner's one way to run git: every git the runner starts (plugkit work's worktrees and
landings, the gates' status check) goes through run(), under one environment rule; the programs
outside its event loop (the Ray driver and node side) through run_sync(), its blocking face.

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
import signal
import subprocess
from dataclasses import dataclass

TIMEOUT_S = 120.0
REPO_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
            "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_PREFIX", "GIT_NAMESPACE", "GIT_IMPLICIT_WORK_TREE")
QUIET_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_EDITOR": "true", "GIT_SEQUENCE_EDITOR": "true",
             "GIT_MERGE_AUTOEDIT": "no", "GIT_OPTIONAL_LOCKS": "0"}


class GitTimeout(Exception):
    """git ran past its timeout and was killed with its process group."""


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
    """git ARGS in cwd. Raises OSError when git cannot start (not installed, cwd missing) and
    GitTimeout past `timeout` seconds."""
    proc = await asyncio.create_subprocess_exec(
        "git", *args, cwd=cwd, env=environment(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
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
    """run()'s blocking face, for the programs outside the event loop (the Ray driver and node
    side, runner/node/): the same environment rule, the same process group killed whole on a
    timeout. Raises OSError when git cannot start and GitTimeout past `timeout` seconds."""
    proc = subprocess.Popen(["git", *args], cwd=cwd, env=environment(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                            start_new_session=True)
    try:
        out, err = proc.communicate(input, timeout)
    except BaseException as e:  # a timeout, or KeyboardInterrupt: the git process must not outlive us
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        if isinstance(e, subprocess.TimeoutExpired):
            raise GitTimeout(f"git {args[0] if args else ''} took over {timeout:.0f} s") from None
        raise
    return Done(proc.returncode or 0, out, err)
