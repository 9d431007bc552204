"""A worker's hooks, installed into its fresh worktree by the client's own installer, run as a process."""

import asyncio
import os
import sys

from plugkit.work import workers
from runner.core.work import git
from runner.core.work.model import Failed

INSTALL_TIMEOUT_S = 60.0


async def install_hooks(row: workers.WorkerRow, worktree: str, env: dict[str, str]) -> None:
    args = workers.install_args(row)
    if args is None:
        return
    # A process, not an import: the hosts' hook formats are the client's (client/hooks), and the
    # runner never imports the client (client -> plugkit <- runner). The runner's own interpreter
    # (not the `plugkit` first on the worker's PATH) installs hooks of the runner's own version.
    # -P: `-m` would put the worktree (cwd) first on sys.path, and a `client/` package a worker
    # left there (committed on a kept branch, or uncommitted in a worktree kept over a usage-limit
    # wait) would run as the runner, outside the sandbox.
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-m", "client.cli", *args, cwd=worktree, env={**os.environ, **env},
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        _out, err = await asyncio.wait_for(proc.communicate(), INSTALL_TIMEOUT_S)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        proc.kill()
        await proc.wait()
        raise
    if proc.returncode != 0:
        line = (err.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise Failed("failed", "spawn_failed", f"plugkit install --platform {row.platform} failed: {line}")
    if row.hooks_file and await git.run(worktree, "ls-files", "--", row.hooks_file):
        # The project commits this file: our merge into it must not ride along on the worker's
        # `git add -A` into the project (pointing its hooks at this machine's plugkit).
        await git.run(worktree, "update-index", "--skip-worktree", "--", row.hooks_file)
