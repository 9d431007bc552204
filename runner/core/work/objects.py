"""The worker's own git object dir and branch ref, from the attempt's side: made fresh before it
spawns, its objects imported into the repository only once checked (runner/system/worker_objects.py),
then its branch's tip written by the runner's own git (runner/system/worker_refs.py)."""

import asyncio
import os

from runner.core.work import git
from plugkit.vocab import WORK_REJECTED as REJECTED
from runner.core.work.model import Failed, ItemRun
from runner.system import worker_objects, worker_refs


async def _common(root: str) -> str:
    return os.path.realpath(os.path.join(root, await git.run(root, "rev-parse", "--git-common-dir")))


async def fresh(root: str, worktree: str, branch: str) -> None:
    """An empty private object dir beside the worktree (the sandbox shows it as .git/objects) and a
    private refs dir holding its branch (shown over refs/heads/plugkit/)."""
    common = await _common(root)
    await asyncio.to_thread(worker_objects.prepare, worktree, common)
    await asyncio.to_thread(worker_refs.prepare, worktree, common, branch)


async def take(root: str, it: ItemRun) -> Failed | None:
    """What the worker wrote, re-hashed and checked into the real store; the hold (not raised:
    the caller puts moved refs back first) when something it wrote may not enter."""
    assert it.worktree is not None
    common = await _common(root)
    try:
        await asyncio.to_thread(worker_objects.take, it.worktree, common)
    except worker_objects.BadObjects as exc:
        return Failed("blocked", "bad_objects", f"{exc}; nothing of it entered the repository{await _drop(root, it)}"
                                                f", its object dir is kept at {worker_objects.private_dir(it.worktree)}"
                                                "; a person looks before "
                                                f"`plugkit prd update {it.id} --status pending`")
    return await _take_branch(root, it)


async def _take_branch(root: str, it: ItemRun) -> Failed | None:
    """Its branch's tip, from its private refs dir into the repository by the runner's git
    (--no-deref, a hash only); a hold naming what else it wrote there (never imported)."""
    if it.branch is None or worker_refs.existing(it.worktree) is None:
        return None
    found = await asyncio.to_thread(worker_refs.read, it.worktree, it.branch)
    ref = f"refs/heads/{it.branch}"
    if not (found.links or found.strays):  # else kept for a person to look at
        await asyncio.to_thread(worker_refs.discard, it.worktree)
    # Moved by the worker only: a Ray attempt's branch comes back through the gateway instead.
    if found.tip is not None and found.tip != found.given:
        try:
            await git.run(root, "update-ref", "--no-deref", "-m", "plugkit work: the worker's commits", ref, found.tip)
        except git.GitError as exc:
            return Failed("blocked", "bad_objects", f"its branch {it.branch} names {found.tip[:12]}, which the "
                                                    f"repository cannot take ({exc}); a person looks before "
                                                    f"`plugkit prd update {it.id} --status pending`")
    if found.links:
        return Failed("blocked", "symbolic_ref", f"the worker planted symbolic refs or links where refs are written "
                                                 f"({', '.join(found.links[:4])}): never followed, never imported, kept "
                                                 f"in {worker_refs.private_dir(it.worktree)}; a person looks before "
                                                 f"`plugkit prd update {it.id} --status pending`")
    if found.strays:
        return Failed(REJECTED, "refs_moved", f"the worker wrote refs only the runner moves ({', '.join(found.strays[:4])})"
                                              f": never imported, kept in {worker_refs.private_dir(it.worktree)}; "
                                              "a person looks before "
                                              f"`plugkit prd update {it.id} --status pending`")
    return None


async def _drop(root: str, it: ItemRun) -> str:
    """The branch names commits the store never got (a broken ref every `git fsck` and `git
    branch` would trip on): it goes, its tip named in the hold. --no-deref: the worker can write it."""
    if it.branch is None:
        return ""
    ref = f"refs/heads/{it.branch}"
    sha = await git.run(root, "rev-parse", "-q", "--verify", ref, check=False)
    if not sha:
        return ""
    await git.run(root, "update-ref", "--no-deref", "-d", ref, check=False)
    return f"; its branch {it.branch} (at {sha[:12]}) was dropped"
