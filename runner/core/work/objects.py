"""The worker's own git object dir, from the attempt's side: made fresh before it spawns, its
objects imported into the repository only once checked (runner/system/worker_objects.py)."""

import asyncio
import os

from runner.core.work import git
from runner.core.work.model import Failed, ItemRun
from runner.system import worker_objects


async def _common(root: str) -> str:
    return os.path.realpath(os.path.join(root, await git.run(root, "rev-parse", "--git-common-dir")))


async def fresh(root: str, worktree: str) -> None:
    """An empty private object dir beside the worktree: the sandbox shows it as .git/objects."""
    common = await _common(root)
    await asyncio.to_thread(worker_objects.prepare, worktree, common)


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
