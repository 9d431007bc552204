"""What a sandboxed worker can plant in its own worktree's admin dir (.git/worktrees/<id>: HEAD,
index, logs/, refs/ are writable in its sandbox, runner/system/sandbox.py) that would stop the
runner's own git: a FIFO (git's plain open() of HEAD or the index waits for a writer that never
comes: every git in that worktree, and `git worktree list` in the repository, which reads each
worktree's HEAD, hung to its timeout while holding the repository's worktree lock), or a link
(git follows it out of the repository: a reflog line appended to any file the person owns).
Before every git the runner starts (runner/system/git.py) what git would read is swept: every
entry but files and directories is removed, never followed, as runner/core/work/refs.py does
for the refs a worker can write; git never makes one there. A filesystem walk, no git; bounded:
an admin dir it cannot sweep (too many entries, an entry it cannot remove) gets no git at all."""

from __future__ import annotations

import os
import re
import stat

from plugkit import confined

# Where `plugkit work` puts a worker's worktree (runner/core/work/attempt.py), and where a Ray
# node's runner puts an attempt's (runner/node/clone.py: <node dir>/tmp/attempt-*/wt, off the
# node's bare clone of the project).
WORKTREES = os.sep + os.path.join(".plugkit", "worktrees") + os.sep
NODE_WORKTREE = re.compile(r"^(.*/tmp/attempt-[^/]+/wt)(?:/|$)")
MAX_ENTRIES = 4096  # an admin dir holds a dozen; more is a worker's doing, refused unwalked
# Commands run in the repository that read every worktree's admin dir (HEAD, its reflog).
ALL_WORKTREES = frozenset({"worktree"})


def _read(folder: str, name: str) -> str:
    said = confined.read_in(folder, name, 4096)
    return said.decode(errors="replace").strip() if said else ""


def _admin_of(top: str) -> str | None:
    """The admin dir a worktree's `.git` file names (that file is read-only to its worker)."""
    said = _read(top, ".git")
    if not said.startswith("gitdir:"):
        return None
    return os.path.normpath(os.path.join(top, said[len("gitdir:"):].strip()))


def common_dir(gitdir: str) -> str:
    """The directory a linked worktree's git dir shares refs and objects with (its `commondir`
    file, read confined), else the git dir itself."""
    said = _read(gitdir, "commondir")
    return os.path.normpath(os.path.join(gitdir, said)) if said else gitdir


def _repository_dir(cwd: str) -> str | None:
    """The repository's common git dir holding cwd, found as git finds it, without git."""
    probe = os.path.realpath(cwd)
    if os.path.isfile(os.path.join(probe, "HEAD")) and os.path.isdir(os.path.join(probe, "objects")):
        return probe  # a bare repository (a node's clone cache) or a git dir itself
    while True:
        dot_git = os.path.join(probe, ".git")
        if os.path.isdir(dot_git) and not os.path.islink(dot_git):
            return dot_git
        if os.path.isfile(dot_git):
            admin = _admin_of(probe)
            return common_dir(admin) if admin else None
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent


def _workers_admins(common: str) -> list[str]:
    """The admin dirs of the repository's worktrees that `plugkit work` made (their `gitdir`
    file, read-only to the worker, names a path under .plugkit/worktrees/)."""
    folder = os.path.join(common, "worktrees")
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    out = []
    for name in names[:MAX_ENTRIES]:
        said = _read(os.path.join(folder, name), "gitdir")
        if WORKTREES in said or NODE_WORKTREE.match(said):
            out.append(os.path.join(folder, name))
    return out


def _worker_top(real: str) -> str | None:
    """The top of the worker's worktree holding the resolved path, else None."""
    at = real.find(WORKTREES)
    if at >= 0:
        return real[:at + len(WORKTREES)] + real[at + len(WORKTREES):].split(os.sep)[0]
    node = NODE_WORKTREE.match(real)
    return node.group(1) if node else None


class Unswept(Exception):
    """An admin dir holding what could not be removed, or too many entries to look at."""


def _sweep(admin: str) -> list[str]:
    """Removes every entry under admin that is neither a file nor a directory; what it removed.
    Raises Unswept naming what stays."""
    seen, removed, stack = 0, [], [admin]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                found = list(entries)
        except FileNotFoundError:
            continue  # gone meanwhile: nothing to run into
        except NotADirectoryError:
            found = []
        for entry in found:
            seen += 1
            if seen > MAX_ENTRIES:
                raise Unswept(admin)
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except FileNotFoundError:
                continue  # a lock file git renamed meanwhile
            if stat.S_ISDIR(mode):
                stack.append(entry.path)
            elif not stat.S_ISREG(mode):
                try:
                    os.unlink(entry.path)  # a link itself, never what it names
                except FileNotFoundError:
                    continue
                except OSError:
                    raise Unswept(entry.path) from None
                removed.append(entry.path)
    return removed


def sweep(cwd: str, args: tuple[str, ...]) -> list[str]:
    """Removes the links, FIFOs, sockets and devices a worker left in the admin dirs the git ARGS
    in cwd would read; what it removed. Raises Unswept for one it could not sweep."""
    real = os.path.realpath(cwd)
    admins: list[str] = []
    top = _worker_top(real)
    if top is not None:
        admin = _admin_of(top)
        if admin is not None:
            admins.append(admin)
    if args and args[0] in ALL_WORKTREES:
        common = _repository_dir(real)
        if common is not None:
            admins += _workers_admins(common)
    removed: list[str] = []
    for admin in dict.fromkeys(admins):
        if os.path.islink(admin) or (os.path.lexists(admin) and not os.path.isdir(admin)):
            raise Unswept(admin)
        removed += _sweep(admin)
    return removed
