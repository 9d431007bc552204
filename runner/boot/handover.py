"""`runner.restart`: the runner re-executes itself in place and keeps its running tasks.

Why execve of the same process and not a successor over a Unix socket: the tasks stay our
children (same pid: we still reap them, and the child-subreaper flag survives execve), the
listening socket and the instance lock are the same open files (a client connecting in the
gap waits in the backlog instead of finding no runner and racing a new one in), and nothing
has to be passed by SCM_RIGHTS. The cost: the fds must be inheritable for the exec, and what
the kernel cannot carry across it (a Chromium page on a pipe, a serial port) is closed first.

Order: check the interpreter starts the installed code at all (so a broken upgrade refuses
the restart while the old image still serves), stop driving work runs but leave them live on
disk (the new image resumes them, runner/core/work/resume.py), flush the ledger, end what
cannot cross (prepare_handover), answer; then, in one turn of the loop with no await, hand
the tasks over, write the handover file and exec. If the exec fails nothing was closed: the
fds go back to close-on-exec and the old image serves on.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import sys
import time
from dataclasses import dataclass

from plugkit.refusals import Unavailable
from runner.core.tasks.handover import Cut
from runner.rpc.context import Context
from runner.system import handover as handover_file
from runner.system import logs

log = logs.get("plugkit.server")
PREFLIGHT_S = 60.0
# The answer leaves before the exec closes its connection (runner.shutdown waits as long).
ANSWER_S = 0.05
SETTLE_S = 2.0  # the longest the exec waits for requests being answered


@dataclass(frozen=True)
class Restarting:
    """What runner.restart answers: the tasks kept, and the ones that could not cross."""

    kept: list[int]
    cut: list[Cut]


@dataclass
class Restarter:
    """Bound by serve() to this image's listening socket, instance lock and token."""

    ctx: Context
    listen_fd: int
    lock_fd: int
    token: str
    busy: bool = False
    pending: "asyncio.Task | None" = None  # the exec, once the answers are out

    async def restart(self) -> Restarting:
        if self.busy:
            raise Unavailable("a restart is already under way; `plugkit runner status` shows when it is done")
        self.busy = True
        try:
            await _preflight()
            ctx = self.ctx
            if ctx.work is not None and ctx.work.built:  # a live run stays live: the new image resumes it
                await ctx.work.get().close(keep_live=True)
            cut = await ctx.tasks.prepare_handover()
            kept = sorted(t.id for t in ctx.tasks.running())
        except BaseException:
            self.busy = False
            self.ctx.tasks.restarting = False
            raise
        self.pending = asyncio.get_running_loop().create_task(self._when_answered(cut), name="restart-exec")
        return Restarting(kept=kept, cut=cut)

    async def _when_answered(self, cut: list[Cut]) -> None:
        """Until this restart's own answer and those of the waits it cut short are out (the
        exec closes every connection), at most SETTLE_S; then the exec."""
        await asyncio.sleep(ANSWER_S)
        deadline = asyncio.get_running_loop().time() + SETTLE_S
        while self.ctx.tasks.waits_cut() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.005)
        self.exec_now(cut)

    def exec_now(self, cut: list[Cut]) -> None:
        """No await from here to the exec: no request, no task output is handled in between."""
        ctx = self.ctx
        home = ctx.runtime.home
        handed, late = ctx.tasks.hand_over()
        inherited = handover_file.Inherited(secrets.token_urlsafe(24), ctx.runtime.runner_id,
                                            self.lock_fd, self.listen_fd)
        task_dirs = [d for e in ctx.tasks.executors for d in getattr(e, "task_dirs", lambda: [])()]
        try:
            handover_file.write(home, handover_file.Handover(
                pid=os.getpid(), nonce=inherited.nonce, written_at=time.time(), token=self.token,
                port=ctx.runtime.port, tasks=handed, task_dirs=task_dirs, cut=[str(c) for c in cut + late]))
            for fd in (self.lock_fd, self.listen_fd):
                os.set_inheritable(fd, True)
            log.info("runner_reexec", kept=[t.id for t in handed], cut=[str(c) for c in cut + late])
            for handler in logging.getLogger().handlers:
                handler.flush()
            env = dict(os.environ, **{handover_file.ENV: inherited.env()})
            os.execve(sys.executable, list(sys.orig_argv), env)
        except Exception as exc:  # the exec did not happen: this image serves on, tasks and all
            handover_file.remove(home)
            for fd in (self.lock_fd, self.listen_fd):
                try:
                    os.set_inheritable(fd, False)
                except OSError:
                    pass
            ctx.tasks.restart_failed(handed)
            self.busy = False
            log.error("runner_reexec_failed", error=str(exc))


async def _preflight() -> None:
    """The interpreter imports the installed runner (a package upgraded under us included): a
    broken install refuses the restart here, while this image still serves and nothing ended."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import runner.boot.main, runner.boot.serve, runner.boot.handover",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        async with asyncio.timeout(PREFLIGHT_S):
            _out, err = await proc.communicate()
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise Unavailable(f"the installed runner did not import within {PREFLIGHT_S:.0f} s; "
                          "nothing was restarted") from None
    if proc.returncode != 0:
        last = (err.decode(errors="replace").strip().splitlines() or ["?"])[-1][:300]
        raise Unavailable(f"the installed runner does not start ({last}); nothing was restarted: "
                          "repair the install, then `plugkit runner restart`")
