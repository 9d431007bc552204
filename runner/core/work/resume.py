"""A run the runner's death interrupted (kill -9, OOM, a reboot) is resumed by the next runner.

At boot the runner finds the run by its live marker (runner/core/work/store.py). Unless the
workspace says `work_resume = false`, or the run cannot be driven again (a Ray run, whose
workers live on other machines; a run kept by a version that did not keep its workers'
environment), each item that was live when the runner died is marked `spawning/
runner_restarted` at once, so `prd list` (still in_progress), `work status` and the page
agree from the first answer, and its next attempt starts with `recover` below:

- nothing of the dead attempt is trusted more than at an ordinary attempt's end: the worker's
  objects are checked into the store (objects.take), the refs it moved are judged against
  its snapshot, which the dead runner kept on disk (refs.py), and restored;
- the commits on its branch past the attempt's base are kept: the new worktree starts at the
  branch's tip, the run's checks (control files, its check changed or weakened) still judge
  everything from the old base, and the new worker is told what was kept and that the rest
  (anything uncommitted) is gone;
- the interruption is not a failed pass (`interruptions` counts it, `failures` does not).
"""

import asyncio
from typing import Optional, Protocol

from runner.core.work import git, held, objects
from runner.core.work.model import ItemRun, Run
from runner.core.work.refs import RefGuard

class Attempts(Protocol):
    """What recover() needs of runner/core/work/attempt.py's Attempts (which calls it)."""

    run: Run
    refs: RefGuard
    land_lock: asyncio.Lock

    @property
    def p(self): ...

    def check_dir(self, it: ItemRun) -> str: ...


RUNTIMES = ("local",)  # a Ray worker runs on a node the dead runner's cgroups did not hold
MAX_SUBJECTS = 5


def refusal(run: Run, resume_on: bool, env: Optional[object]) -> Optional[str]:
    """Why this interrupted run is not resumed (halted as before), or None."""
    if not resume_on:
        return "work_resume = false in .plugkit/config.toml"
    if run.runtime not in RUNTIMES:
        return f"a {run.runtime} run is not resumed (its workers ran on other machines)"
    if not isinstance(env, dict):
        return "its workers' environment was not kept"
    return None


CUT = ("spawning", "running", "verifying", "landing")  # an attempt under way when the runner died


def mark(run: Run, now: float) -> list[ItemRun]:
    """Each item whose attempt the death cut, marked to resume; with the items parked on a usage
    limit (their wait is taken up again, their worktree kept: quota.py), the items for the
    driver to start at once. An item a spent budget paused stays paused: only a person's
    `work resume` starts it (budget.py), after a crash as before it."""
    cut = [it for it in run.items.values() if it.state in CUT]
    for it in cut:
        it.interruptions += 1
        it.interrupted = (f"the runner stopped (a crash or a restart) during your attempt {it.attempt}"
                          f"{'' if it.verify is None else f'; the last check of your branch was {it.verify}'}")
        it.enter("spawning", now, "runner_restarted",
                 f"the runner stopped during attempt {it.attempt}; resumed with the commits on {it.branch}")
    return cut + [it for it in run.items.values() if it.state == "waiting_quota"]


async def recover(attempts: Attempts, it: ItemRun) -> Optional[tuple[str, str]]:
    """The dead attempt judged as any attempt's end; (its base, its branch's tip) to continue
    from, or None to start afresh (no base recorded, or the branch gone or rewritten)."""
    p = attempts.p
    root = p.ws.root
    if it.worktree is not None:
        bad = await objects.take(root, it)  # what the dead worker wrote, checked before any ref is read
        if attempts.refs.watching(it.id):
            await held.refs_moved(attempts.run, it, attempts.refs, attempts.land_lock)
        if bad is not None:
            raise bad
        async with attempts.land_lock:
            await attempts.refs.settle(it.id, it.branch)
        for path in (it.worktree, attempts.check_dir(it)):
            try:  # never entered: no git runs inside what the dead worker left
                await git.remove_worktree(root, path)
            except git.GitError:
                pass
    base, ref = it.base, f"refs/heads/{it.branch}" if it.branch else None
    tip = await git.run(root, "rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False) if ref else ""
    if not base or not tip or not await git.is_ancestor(root, base, tip):
        it.interrupted = f"{it.interrupted}; nothing of that attempt was kept: start afresh"
        return None
    subjects = (await git.run(root, "log", "--no-merges", f"--max-count={MAX_SUBJECTS}", "--format=%s",
                              f"{base}..{tip}")).splitlines()
    ahead = await git.commits_ahead(root, base, it.branch or tip)
    kept = (f"your branch {it.branch} keeps its {ahead} commit(s): " + "; ".join(s[:80] for s in subjects)
            + ("; ..." if ahead > len(subjects) else "")) if ahead else f"nothing was committed on {it.branch}"
    it.interrupted = f"{it.interrupted}\n{kept}\nanything not committed was lost; check the worktree and go on"
    return base, tip
