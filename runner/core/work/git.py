"""The git operations of `plugkit work`: a worktree per item, integrating its branch, landing, rollback."""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass

from runner.system import git as system_git, worktree_files

TIMEOUT_S = 120.0

# A person's config must not turn our rebase/merge into something else: autostash would hide
# their edits in a stash we never pop, updateRefs would move branches we do not own, rerere's
# autoupdate would stage a recorded resolution so the conflict goes unreported, autosquash (git
# 2.44+: non-interactive rebases too) would fold a worker's "squash!" commits, editor and all.
_PLAIN = ("-c", "rebase.autoStash=false", "-c", "rebase.updateRefs=false", "-c", "merge.autoStash=false",
          "-c", "rerere.autoUpdate=false", "-c", "rebase.autoSquash=false")

# Operations a repository can be stopped in the middle of: (file in the git dir, what, the fix).
_IN_PROGRESS = (
    ("MERGE_HEAD", "a merge", "git merge --continue (or --abort)"),
    ("rebase-merge", "a rebase", "git rebase --continue (or --abort)"),
    ("rebase-apply", "a rebase or am", "git rebase --continue or git am --continue (or --abort)"),
    ("CHERRY_PICK_HEAD", "a cherry-pick", "git cherry-pick --continue (or --abort)"),
    ("REVERT_HEAD", "a revert", "git revert --continue (or --abort)"),
    ("sequencer", "a cherry-pick/revert sequence", "git cherry-pick/revert --continue (or --abort)"),
)

# Why `git merge --ff-only` refused in the main worktree, from its stderr.
_OVERWRITE = re.compile(r"(local changes to the following files|untracked working tree files) would be")
_NOT_FF = re.compile(r"not possible to fast-forward", re.I)


GitError = system_git.GitError  # one error for every git the runner runs (runner.system.git)


class MergeConflict(GitError):
    """The work and its target changed the same lines; `.files` names them (empty: the target moved),
    `.texts` holds each conflicted file as git left it, markers and all (the landing queue's hunks)."""

    def __init__(self, message: str, files: list[str] | None = None, texts: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.files = list(files or [])
        self.texts = dict(texts or {})


CONFLICT_READ = 64 << 10  # bytes of each conflicted file kept for its hunks


@dataclass(frozen=True)
class Integrated:
    sha: str  # the commit that, once verified, becomes the starting branch's tip
    changed: bool  # differs from the branch tip the worker left: verify it again before landing
    # The scratch checkout holds exactly `sha`, made by the runner for this (a rebase in a fresh
    # checkout): the check may run there without a second checkout of the same tree.
    checked_out: bool = False


async def _git(cwd: str, *args: str, input: bytes | None = None) -> tuple[int, str, str]:
    """git through the runner's one adapter (runner.system.git: its environment rule, SAFE, its group kill)."""
    done = await system_git.safe(cwd, *args, input=input, timeout=TIMEOUT_S)
    return done.rc, done.out.decode(errors="replace"), done.err.decode(errors="replace")


async def run(cwd: str, *args: str, check: bool = True, input: bytes | None = None) -> str:
    """git's stdout, stripped; with check=False also when git failed."""
    return (await system_git.out(cwd, *args, check=check, input=input, timeout=TIMEOUT_S)).strip()


async def _ok(cwd: str, *args: str) -> bool:
    return (await _git(cwd, *args))[0] == 0


async def _conflicts(cwd: str) -> list[str]:
    return sorted({p for p in (await run(cwd, "diff", "--name-only", "-z", "--diff-filter=U")).split("\0") if p})


async def _in_progress(cwd: str) -> tuple[str, str] | None:
    gitdir = await run(cwd, "rev-parse", "--absolute-git-dir")
    return next(((what, fix) for name, what, fix in _IN_PROGRESS
                 if os.path.exists(os.path.join(gitdir, name))), None)


async def start_point(root: str) -> tuple[str, str]:
    """(branch, tip sha) checked out in `root`, refusing states a run cannot start from."""
    if not await _ok(root, "rev-parse", "--git-dir"):
        raise GitError(f"{root} is not a git repository: run `git init` and commit there, then retry")
    branch = await run(root, "symbolic-ref", "-q", "--short", "HEAD", check=False)
    if not branch:
        head = await run(root, "rev-parse", "--short", "HEAD", check=False)
        raise GitError(f"HEAD in {root} is detached at {head}: run `git switch <branch>` "
                       "(or `git switch -c <new-branch>`) there first")
    sha = await run(root, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False)
    if not sha:
        raise GitError(f"branch {branch} in {root} has no commit yet: make a first commit "
                       "(`git commit --allow-empty -m init`), then retry")
    stopped = await _in_progress(root)
    if stopped:
        raise GitError(f"{stopped[0]} is in progress in {root}: finish it with {stopped[1]}, then retry")
    return branch, sha


async def _user_excludes(root: str) -> str:
    """The excludes file git uses for the person today, so it still applies under our override."""
    configured = await run(root, "config", "--type=path", "core.excludesFile", check=False)
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    try:
        with open(configured or os.path.join(xdg, "git", "ignore"), encoding="utf-8",
                  errors="replace") as f:
            return f.read()
    except OSError:
        return ""


async def _enable_worktree_config(root: str) -> None:
    # Parallel items start together and `git config` fails at once on a locked .git/config:
    # read first (no lock), and a writer that lost the race finds the value set on its retry.
    for _ in range(20):
        if await run(root, "config", "--bool", "extensions.worktreeConfig", check=False) == "true":
            return
        if await _ok(root, "config", "extensions.worktreeConfig", "true"):
            return
        await asyncio.sleep(0.05)
    await run(root, "config", "extensions.worktreeConfig", "true")  # raises with git's reason


async def add_worktree(root: str, path: str, branch: str, base: str, excludes: list[str]) -> None:
    """A worktree at `path` on `branch` (created or reset to `base`), ignoring `excludes` there only."""
    path = os.path.join(root, path)
    try:  # its parent the person's alone: nothing a worker leaves there is another user's to run
        await asyncio.to_thread(worktree_files.private_parent, path)
    except (OSError, worktree_files.NotCopied) as exc:
        raise GitError(f"the worktrees' directory for {path}: {exc}") from None
    async with system_git.registry(root):
        await _remove_worktree(root, path)  # a registration left by an earlier attempt of this item
        await run(root, "worktree", "add", "--no-track", "-B", branch, path, base)
    # core.excludesFile set per worktree replaces the person's own file, so carry it over.
    await _enable_worktree_config(root)
    file = os.path.join(await run(path, "rev-parse", "--absolute-git-dir"), "plugkit-excludes")
    own = await _user_excludes(root)
    with open(file, "w", encoding="utf-8") as f:
        f.write("".join(f"{p}\n" for p in excludes) + "# the person's own excludes\n" + own)
    await run(path, "config", "--worktree", "core.excludesFile", file)


async def remove_worktree(root: str, path: str) -> None:
    """Remove the worktree at `path` (edits in it are dropped), keep its branch; missing: no-op."""
    async with system_git.registry(root):
        await _remove_worktree(root, path)


async def _remove_worktree(root: str, path: str) -> None:
    await system_git.unregister(root, os.path.join(root, path))


async def checkout(root: str, path: str, sha: str) -> None:
    """A fresh runner-owned checkout of `sha` at `path` (runner.system.git.checkout)."""
    await system_git.checkout(root, os.path.join(root, path), sha)


def worktree_git_dir(worktree: str) -> str:
    """The admin dir (.git/worktrees/<name>) of a worktree the runner made, checked both ways:
    its `.git` file names it and its `gitdir` file names that `.git` file back. Git then runs
    with it given explicitly, never discovered from the worktree."""
    dot_git = os.path.join(os.path.realpath(worktree), ".git")
    try:
        with open(dot_git, encoding="utf-8") as fh:
            line = fh.read(4096).strip()
        admin = os.path.realpath(os.path.join(os.path.dirname(dot_git), line.removeprefix("gitdir:").strip()))
        with open(os.path.join(admin, "gitdir"), encoding="utf-8") as fh:
            back = os.path.realpath(fh.read(4096).strip())
    except OSError as exc:
        raise GitError(f"{worktree} is not a worktree plugkit made ({exc.strerror}); is it still there?") from None
    if not line.startswith("gitdir:") or back != dot_git or os.path.basename(os.path.dirname(admin)) != "worktrees":
        raise GitError(f"{worktree} does not name its own git dir; it is not used")
    return admin


async def commits_ahead(root: str, base: str, branch: str) -> int:
    return int(await run(root, "rev-list", "--count", f"{base}..{branch}"))


async def worker_dirty(worktree: str) -> list[str]:
    """dirty() of a worker's worktree, its git dir given explicitly: a worktree the worker writes
    is read, never trusted to say which repository it is. Its .gitattributes are the worker's too:
    `status` would run the person's filter drivers (clean, process) on whatever the worker aims
    them at, so every configured driver is blanked for this git."""
    git_dir = worktree_git_dir(worktree)
    drivers = await run(worktree, f"--git-dir={git_dir}", "config", "--name-only", "--get-regexp", r"^filter\.",
                        check=False)
    names = {name.rsplit(".", 1)[0][len("filter."):] for name in drivers.splitlines() if name.count(".") >= 2}
    off = [f"filter.{n}.{part}" for n in sorted(names) for part in ("clean=", "smudge=", "process=", "required=false")]
    return await dirty(worktree, *(arg for pair in off for arg in ("-c", pair)), f"--git-dir={git_dir}",
                       f"--work-tree={os.path.realpath(worktree)}")


async def dirty(path: str, *where: str) -> list[str]:
    """Paths with uncommitted changes in the checkout, untracked files included."""
    rc, out, err = await _git(path, *where, "status", "--porcelain", "-z", "--untracked-files=all")
    if rc:
        raise GitError(f"git status failed in {path}: {system_git.why(err)}; is it still a worktree?")
    found, skip = [], False
    for entry in out.split("\0"):
        if skip or not entry:  # a rename's second field is its old path
            skip = False
            continue
        found.append(entry[3:])
        skip = entry[0] in "RC"
    return sorted(set(found))


async def tip(root: str, ref: str) -> str:
    sha = await run(root, "rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False)
    if not sha:
        raise GitError(f"no commit named {ref} in {root}: check `git -C {root} log -1 {ref}`")
    return sha


async def is_ancestor(root: str, a: str, b: str) -> bool:
    return await _ok(root, "merge-base", "--is-ancestor", a, b)


async def _git_version(root: str) -> tuple[int, int]:
    m = re.search(r"(\d+)\.(\d+)", await run(root, "--version"))
    return (int(m[1]), int(m[2])) if m else (0, 0)


def _head(path: str) -> str:
    """A conflicted file's first bytes as text; a symlink or a missing file reads as nothing."""
    if os.path.islink(path) or not os.path.isfile(path):
        return ""
    with open(path, "rb") as fh:
        return fh.read(CONFLICT_READ).decode(errors="replace")


async def _attempt(cwd: str, what: str, args: tuple[str, ...], fix: str) -> None:
    """Run a rebase/merge/revert; if it stops on conflicts, abort it (all back as it was) and raise."""
    rc, _, err = await _git(cwd, *_PLAIN, *args)
    if rc == 0:
        return
    files = await _conflicts(cwd)
    texts = {f: await asyncio.to_thread(_head, os.path.join(cwd, f)) for f in files[:8]}  # before the abort
    if await _in_progress(cwd):
        await run(cwd, what, "--abort")
    if files:
        raise MergeConflict(f"{what} conflicts in {', '.join(files)[:200]}: {fix}", files, texts)
    raise GitError(f"git {what} failed in {cwd}: {system_git.why(err)}; nothing was changed")


async def _integrate_ff(root: str, scratch: str, branch: str, left: str, onto: str, t: str,
                        message: str, move: bool) -> Integrated:
    if await is_ancestor(root, t, left):
        return Integrated(left, False)
    await checkout(root, scratch, left)  # the runner's own checkout: never the worker's worktree
    await _attempt(scratch, "rebase", ("rebase", t),
                   f"the branch {branch} no longer rebases onto {onto}; a person resolves it")
    rebased = await tip(scratch, "HEAD")
    if move:
        await rebased_to(root, branch, onto, rebased)
    return Integrated(rebased, True, checked_out=True)


async def rebased_to(root: str, branch: str, onto: str, sha: str) -> None:
    """`branch` moved to its rebase onto `onto` (ff mode: what lands is the branch's tip)."""
    await run(root, "update-ref", "-m", f"plugkit work: rebased onto {onto}", f"refs/heads/{branch}", sha)


async def _integrate_merge(root: str, scratch: str, branch: str, left: str, onto: str, t: str,
                           message: str, move: bool) -> Integrated:
    fix = f"{branch} and {onto} changed the same lines; a person merges them"
    if await _git_version(root) < (2, 38):  # no merge-tree --write-tree: merge in a checkout of the runner's
        await checkout(root, scratch, t)
        await _attempt(scratch, "merge", ("merge", "--no-ff", "--no-edit", "-m", message, left), fix)
        return Integrated(await tip(scratch, "HEAD"), True)
    rc, out, err = await _git(root, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z",
                              t, left)
    fields = [f for f in out.split("\0") if f]
    if rc == 1:
        files = sorted(set(fields[1:]))
        texts = {f: (await run(root, "cat-file", "blob", f"{fields[0]}:{f}", check=False))[:CONFLICT_READ]
                 for f in files[:8]}  # the written tree holds each file with its conflict markers
        raise MergeConflict(f"merge conflicts in {', '.join(files)[:200]}: {fix}", files, texts)
    if rc or not fields:
        raise GitError(f"git merge-tree failed in {root}: {system_git.why(err)}; nothing was changed")
    merge = await run(root, "commit-tree", fields[0], "-p", t, "-p", left, "-m", message)
    return Integrated(merge, True)


_INTEGRATE = {"ff": _integrate_ff, "merge": _integrate_merge}


async def integrate(root: str, scratch: str, branch: str, onto: str, mode: str, message: str,
                    sha: str | None = None, base: str | None = None, move: bool = True) -> Integrated:
    """Prepare `branch` (at `sha`, the commit that was checked; default its tip) to land on `onto`
    (at `base`: a tip expected there; default its tip now): as is, rebased (ff) or as a merge commit
    (merge). What needs a checkout is done in `scratch`, a runner-owned one made anew here (a rebase
    moves `branch` to its result unless not `move`: rebased_to does it once it lands); the worker's
    worktree is never touched. `sha`, not the branch read again: a check running the worker's
    code could move the branch after it was checked."""
    if mode not in _INTEGRATE:
        raise GitError(f"unknown merge mode {mode!r}: use one of {', '.join(_INTEGRATE)}")
    t = base or await tip(root, f"refs/heads/{onto}")
    left = sha or await tip(root, f"refs/heads/{branch}")
    return await _INTEGRATE[mode](root, scratch, branch, left, onto, t, message, move)


async def _on_branch(root: str, onto: str) -> None:
    current = await run(root, "symbolic-ref", "-q", "--short", "HEAD", check=False)
    if current != onto:
        now = f"branch {current}" if current else "a detached HEAD"
        raise GitError(f"{root} has {now} checked out, not {onto}: run `git switch {onto}` there, then retry")


async def advance(root: str, onto: str, sha: str) -> None:
    """Fast-forward `onto`, checked out in `root`, to `sha`; all or nothing."""
    await _on_branch(root, onto)
    moved = MergeConflict(f"{onto} moved since this item was integrated: integrate it again", [])
    if not await is_ancestor(root, f"refs/heads/{onto}", sha):
        raise moved
    rc, _, err = await _git(root, *_PLAIN, "merge", "-q", "--ff-only", sha)
    if rc == 0:
        return
    if _OVERWRITE.search(err):
        files = sorted({ln.strip() for ln in err.splitlines() if ln.startswith("\t")})
        raise MergeConflict(f"uncommitted changes in {root} to {', '.join(files)[:200]} would be "
                            "overwritten by landing: commit or stash them, then retry", files)
    if _NOT_FF.search(err):
        raise moved
    raise GitError(f"landing on {onto} failed in {root}: {system_git.why(err)}; nothing was changed")


async def tag(root: str, name: str, sha: str) -> None:
    await run(root, "tag", "-f", name, sha)


# How to revert one landed item under later work: its own commits, or its merge against mainline.
_REVERT = {"ff": lambda before, landed: (f"{before}..{landed}",),
           "merge": lambda before, landed: ("-m", "1", landed)}


async def rollback(root: str, onto: str, tag_name: str, landed: str, mode: str) -> str:
    """Undo one landed item on `onto`: reset if nothing came after it, else revert it; the new tip."""
    if mode not in _REVERT:
        raise GitError(f"unknown merge mode {mode!r}: use one of {', '.join(_REVERT)}")
    await _on_branch(root, onto)
    before, landed, current = await tip(root, tag_name), await tip(root, landed), await tip(root, "HEAD")
    if current == landed:
        rc, _, err = await _git(root, "reset", "-q", "--keep", before)
        if rc:
            raise GitError(f"rollback of {onto} refused in {root}: {system_git.why(err)}; your uncommitted "
                           "changes touch the same files: commit or stash them, then retry")
        return await tip(root, "HEAD")
    if not await is_ancestor(root, landed, current):
        raise GitError(f"{landed[:12]} is no longer on {onto} in {root}: nothing to roll back there")
    await _attempt(root, "revert", ("revert", "--no-edit", *_REVERT[mode](before, landed)),
                   f"later work on {onto} changed the same lines; a person reverts it by hand")
    return await tip(root, "HEAD")
