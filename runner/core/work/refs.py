"""The refs of a run's repository are the runner's, except each worker's own branch.

A worktree shares every ref with the person's checkout, so a worker that runs
`git update-ref refs/heads/main HEAD` lands unverified work without any check, and one that
resets `main` drops a sibling's landed commit. The policy denies the usual spellings; this
is the evidence-based half that no spelling escapes: each worker's refs are snapshotted
when it spawns, every ref the runner moves itself is written into the live snapshots, and
when the worker ends anything else that moved, appeared or vanished is restored, what the
worker wrote kept under refs/plugkit/evidence/<run>/<item>/.

The snapshots are written through `keep` after every change (the run's `.refs.json`): a
runner started after a crash judges the interrupted workers against them
(runner/core/work/resume.py), so a ref moved just before the crash is still caught.

Not judged: the branches of workers still running (each owns its own; a worker moving a
sibling's branch is caught only by that sibling's check), refs/remotes/ (a fetch mirrors the
remote) and refs/notes/ (Qwen Code records its attribution as notes on every commit): nothing
lands from either.
"""

import os
import stat
from dataclasses import dataclass
from typing import Callable, Optional

from runner.core.work import git

OWN_PREFIX = "refs/heads/"
EVIDENCE = "refs/plugkit/evidence/"
FREE = ("refs/remotes/", "refs/notes/")
HEAD = "HEAD"  # the person's checkout's HEAD ("ref: refs/heads/main", or a sha when detached)


@dataclass(frozen=True)
class Move:
    ref: str
    was: Optional[str]  # None: the worker created it
    now: Optional[str]  # None: the worker deleted it

    def text(self) -> str:
        short = lambda v: "(none)" if v is None else v.removeprefix("ref: ")[:12]  # noqa: E731
        return f"{self.ref} {short(self.was)} -> {short(self.now)}"


async def read(root: str) -> dict[str, str]:
    out = await git.run(root, "for-each-ref", "--format=%(refname) %(objectname)")
    found = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    head = await git.run(root, "symbolic-ref", "-q", "HEAD", check=False)
    found[HEAD] = f"ref: {head}" if head else await git.run(root, "rev-parse", "-q", "--verify", "HEAD",
                                                            check=False)
    return {k: v for k, v in found.items() if not k.startswith(FREE)}


class RefGuard:
    """One per run: a snapshot per live worker, kept in step with what the runner moves."""

    def __init__(self, root: str, run_id: str, keep: Callable[[dict], None] = lambda snaps: None,
                 kept: Optional[dict] = None) -> None:
        self.root, self.run_id, self._keep = root, run_id, keep
        self._snaps: dict[str, dict[str, str]] = {}
        for item, snap in (kept or {}).items():  # a dead runner's, read back: only well-formed entries
            if isinstance(item, str) and isinstance(snap, dict):
                self._snaps[item] = {k: v for k, v in snap.items() if isinstance(k, str) and isinstance(v, str)}

    def watching(self, item_id: str) -> bool:
        return item_id in self._snaps

    async def watch(self, item_id: str) -> None:
        self._snaps[item_id] = await read(self.root)
        self._keep(self._snaps)

    def ours(self, ref: str, sha: Optional[str]) -> None:
        """The runner moved `ref` itself (None: deleted it): no worker did."""
        for snap in self._snaps.values():
            if sha is None:
                snap.pop(ref, None)
            else:
                snap[ref] = sha
        if self._snaps:
            self._keep(self._snaps)

    async def settle(self, item_id: str, branch: Optional[str]) -> None:
        """The worker's attempt is over: its branch, as it is now, is no longer anyone's doing."""
        if self._snaps.pop(item_id, None) is not None:
            self._keep(self._snaps)
        if branch is not None:
            ref = OWN_PREFIX + branch
            self.ours(ref, await git.run(self.root, "rev-parse", "-q", "--verify", ref, check=False) or None)

    async def moved(self, item_id: str, owned: set[str]) -> list[Move]:
        """What changed since the worker spawned, less the refs of live workers (`owned`)."""
        snap = self._snaps.get(item_id)
        if snap is None:
            return []
        now = await read(self.root)
        return [Move(ref, snap.get(ref), now.get(ref)) for ref in sorted(set(snap) | set(now))
                if ref not in owned and not ref.startswith(EVIDENCE) and snap.get(ref) != now.get(ref)]

    async def restore(self, item_id: str, moves: list[Move]) -> tuple[list[str], list[str]]:
        """Every move undone, what the worker wrote kept as evidence: (evidence refs, what failed)."""
        kept, failed, lines = [], [], []
        for m in moves:
            if m.ref == HEAD:
                continue
            if m.now is not None:
                evidence = f"{EVIDENCE}{self.run_id}/{item_id}/{m.ref.removeprefix('refs/')}"
                lines.append(f"update {evidence} {m.now}")
                kept.append(evidence)
            lines.append(f"delete {m.ref} {m.now}" if m.was is None else f"create {m.ref} {m.was}"
                         if m.now is None else f"update {m.ref} {m.was} {m.now}")
        failed += await self._drop_broken([m for m in moves if m.now is None and m.was is not None])
        if lines:
            try:
                # --no-deref on every line: these refs are ones a worker could write, and a symbolic
                # one would carry the delete or update through to its target (main).
                await git.run(self.root, "update-ref", "--no-deref", "--stdin",
                              input=("\n".join(lines) + "\n").encode())
            except git.GitError as exc:
                failed.append(str(exc))
        for m in moves:
            if m.ref == HEAD and m.was is not None:
                failed += await self._checkout(m.was)
        for m in moves:
            self.ours(m.ref, m.was)
        for ref in kept:
            self.ours(ref, await git.run(self.root, "rev-parse", "-q", "--verify", ref, check=False) or None)
        return kept, failed

    async def _drop_broken(self, vanished: list[Move]) -> list[str]:
        """A ref the worker overwrote with garbage is not listed (git skips a broken ref), so it
        looks deleted; but its loose file is still there and makes git refuse to create it
        again ("reference broken"). Only such a file is removed: the transaction then writes
        the ref as it was."""
        if not vanished:
            return []
        common = await git.run(self.root, "rev-parse", "--git-common-dir", check=False)
        if not common:
            return []
        common = os.path.join(self.root, common)
        failed = []
        for m in vanished:
            path = os.path.join(common, *m.ref.split("/"))
            if m.ref != HEAD and os.path.isfile(path) and not os.path.islink(path):
                try:
                    os.unlink(path)
                except OSError as exc:
                    failed.append(f"{m.ref} is broken and could not be removed ({exc}): remove {path}")
        return failed

    async def _checkout(self, was: str) -> list[str]:
        target = was.removeprefix("ref: ").removeprefix(OWN_PREFIX)
        try:
            await git.run(self.root, "checkout", "-q", target)
        except git.GitError as exc:
            return [f"{self.root} no longer has {target} checked out and switching back failed ({exc}): "
                    f"run `git -C {self.root} switch {target}`"]
        return []


# Where a worker run without a sandbox (--no-sandbox) writes its branch itself; a sandboxed one writes
# its own copy (runner/system/worker_refs.py), but a link found here is still never followed.
WRITABLE = ("refs/heads/plugkit", "logs/refs/heads/plugkit")


def _symbolic(path: str) -> bool:
    """A link, anything not a plain file or dir, or a file saying `ref: ...`; read without following."""
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        return False
    if not stat.S_ISREG(st.st_mode):
        return True
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        return os.read(fd, 4) == b"ref:"
    finally:
        os.close(fd)


def planted(common: str) -> list[str]:
    """Removes every symbolic ref, link or special file a worker left where it can write refs and
    reflogs (git would follow one: a delete of it deletes main, a reflog line lands in whatever
    file it names); what was removed, as paths under the git dir. Blocking."""
    found = []
    for top in WRITABLE:
        for where, dirs, files in os.walk(os.path.join(common, top)):  # never follows a linked dir
            for name in dirs + files:
                path = os.path.join(where, name)
                try:
                    if _symbolic(path):
                        os.unlink(path)
                        found.append(os.path.relpath(path, common))
                except OSError:
                    continue
    return sorted(found)


def owned_by_workers(branches: list[Optional[str]]) -> set[str]:
    return {OWN_PREFIX + b for b in branches if b}
