"""A sandboxed worker's own branch, in a refs directory no other process shares.

A commit writes its branch's ref through a lock file made in the ref's directory and appends to
the branch's reflog, so a worker needs a writable refs/heads/plugkit/ and logs/refs/heads/plugkit/.
Those directories of the repository are shared: every live worker, the runner and the person's
git write there. A worker could plant a link at another branch's reflog (git appends a line
through it: the runner's next `worktree add -B` or `update-ref` on that branch, run outside the
sandbox, writes into any file the person owns) or a `ref: refs/heads/main` file at another
branch (the runner's `worktree add -B` then resets main and checks it out). A sweep when a
worker ends cannot stop a sibling still running. So no worker writes there at all: each gets a
private directory (beside its worktree, outside the real .git) holding a copy of its own ref,
bound into its sandbox over refs/heads/plugkit/, and another one over logs/refs/heads/plugkit/.
When it has ended, read() hands the runner its branch's tip (a regular file holding a hash,
nothing followed), which the runner writes into the repository with its own git; what else the
worker wrote there (another branch, a link, a symbolic ref) is named, never imported.
Standard library only: the Ray node side (runner/node/task.py) uses it too. Blocking.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from typing import Optional

from runner.system import worker_objects

PREFIX = ".refs-"      # the private dir of worktree W: <dirname W>/.refs-<basename W>
NAMESPACE = "plugkit/"  # the branches a worker's commits may move (its own one of them)
# (path under the git dir the sandbox shows, the private subdir shown there)
SHOWN: tuple[tuple[str, str], ...] = (("refs/heads/plugkit", "heads"), ("logs/refs/heads/plugkit", "logs"))
GIVEN = "given"  # beside the shown dirs (the worker never sees it): the tip its branch was given
_HASH = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_MAX_REF = 256


@dataclass(frozen=True)
class Found:
    """What the worker left in its private refs dir."""
    tip: Optional[str]  # its branch's hash; None: it deleted the branch or left no hash there
    given: Optional[str] = None  # the hash its branch had when it started
    strays: list[str] = field(default_factory=list)  # other branches it wrote (refs/heads/plugkit/...)
    links: list[str] = field(default_factory=list)   # links, symbolic refs, special files


def private_dir(worktree: str) -> str:
    return worker_objects.beside(worktree, PREFIX)


def existing(worktree: str) -> Optional[str]:
    """The worktree's private refs dir if the runner made one (a real dir, not a link), else None."""
    return worker_objects.real_dir(private_dir(worktree))


def discard(worktree: str) -> None:
    path = private_dir(worktree)
    if os.path.islink(path):
        os.unlink(path)
    shutil.rmtree(path, ignore_errors=True)


def _leaf(branch: str) -> list[str]:
    names = branch.removeprefix(NAMESPACE).split("/")
    if not branch.startswith(NAMESPACE) or any(n in ("", ".", "..") for n in names):
        raise ValueError(f"branch {branch!r} is not a plugkit/<item> branch")
    return names


def prepare(worktree: str, git_dir: str, branch: str) -> str:
    """A fresh private refs dir for the worktree's next worker, its branch's ref copied in (what an
    earlier attempt left goes). Made only where the repository has the directory it is shown over."""
    names = _leaf(branch)
    discard(worktree)
    path = private_dir(worktree)
    for _, sub in SHOWN:
        os.makedirs(os.path.join(path, sub, *names[:-1]), mode=0o755)
    done = subprocess.run(["git", f"--git-dir={git_dir}", "rev-parse", "-q", "--verify", f"refs/heads/{branch}"],
                          capture_output=True, text=True, env=worker_objects.git_env(), timeout=60)
    tip = done.stdout.strip()
    if done.returncode == 0 and _HASH.fullmatch(tip):
        for where in (os.path.join(path, "heads", *names), os.path.join(path, GIVEN)):
            with open(where, "x", encoding="ascii") as fh:
                fh.write(tip + "\n")
    return path


def _odd(path: str) -> bool:
    """A link, anything but a plain file or dir, or a file that is no plain hash; nothing followed."""
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_REF:
        return True
    return _read(path) is None


def _read(path: str) -> Optional[str]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        text = os.read(fd, _MAX_REF + 1).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    return text if _HASH.fullmatch(text) else None


def read(worktree: str, branch: str) -> Found:
    """The worker's branch tip and what else it left in its private refs dir (reflogs aside: they
    are its own and go with the dir)."""
    root = existing(worktree)
    if root is None:
        return Found(None)
    own = "/".join(_leaf(branch))
    heads = os.path.join(root, "heads")
    tip, strays, links = None, [], []
    for where, dirs, files in os.walk(heads):  # never follows a linked dir
        for name in dirs + files:
            path = os.path.join(where, name)
            rel = os.path.relpath(path, heads)
            try:
                if name in files and name.endswith(".lock") and stat.S_ISREG(os.lstat(path).st_mode):
                    continue  # a commit cut short (git reads no ref there)
                if _odd(path):
                    links.append(f"refs/heads/{NAMESPACE}{rel}")
                elif name in files and rel == own:
                    tip = _read(path)
                elif name in files:
                    strays.append(f"refs/heads/{NAMESPACE}{rel}")
            except OSError:
                continue
    for where, dirs, files in os.walk(os.path.join(root, "logs")):
        for name in dirs + files:
            path = os.path.join(where, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                links.append(f"logs/refs/heads/{NAMESPACE}{os.path.relpath(path, os.path.join(root, 'logs'))}")
    return Found(tip, _read(os.path.join(root, GIVEN)), sorted(strays), sorted(links))
