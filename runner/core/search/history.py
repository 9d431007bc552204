"""A repository's history as commits (subject, body, changed paths and the lines each added or
removed, bounded), read with `git log`. Reconciled with what HEAD reaches (`git rev-list`): a
new commit costs one short log, and a commit amended or rebased away leaves the index."""

import os
from typing import Iterable

from plugkit import confined
from runner.core.search.store import Commit
from runner.system import git as system_git

MAX_COMMITS = 20_000
MAX_BODY = 2000
MAX_PATHS = 200
# Diff hunks: what "why did X change" needs when the subject does not name X. Bounded per commit
# (a vendored drop or a generated file is not worth more) and to the newest commits only, so the
# first index of a long history costs one `git log -p` of DIFF_COMMITS commits.
MAX_DIFF_CHARS = 4000
MAX_DIFF_LINE = 200
DIFF_COMMITS = 2000
RS, US = "\x1e", "\x1f"
FORMAT = f"--format={RS}%H{US}%aI{US}%s{US}%b{US}"
LOG = ["log", "--no-color", "--no-ext-diff", "--no-textconv", "--no-walk=unsorted", "--stdin", FORMAT]


def git_dir(root: str) -> str | None:
    try:
        out = system_git.run_sync(root, "rev-parse", "--absolute-git-dir", timeout=10)
    except (OSError, system_git.GitTimeout):
        return None
    return out.out.decode(errors="replace").strip() if out.rc == 0 else None


def head_files(gitdir: str, commondir: str) -> tuple:
    """What moves when HEAD does, without running git: what HEAD says (a branch or a hash), that
    branch's loose ref, packed-refs and a reftable's list (a commit, a reset, an update-ref replace
    one of them: a new inode), and HEAD's reflog; each file's (inode, mtime, size)."""
    # Through confined (a regular file, no link, a non-blocking open): a linked worktree's admin dir
    # is writable in its worker's sandbox, and a FIFO planted as HEAD held a plain open() forever.
    said = confined.read_in(gitdir, "HEAD", 4096) or b""
    ref = said[5:].strip().decode(errors="replace") if said.startswith(b"ref: ") else ""
    ref = ref if ref.startswith("refs/") and ".." not in ref.split("/") else ""  # only stat'ed, never read
    out: list = [said]
    for path in (os.path.join(commondir, ref) if ref else "", os.path.join(commondir, "packed-refs"),
                 os.path.join(commondir, "reftable", "tables.list"), os.path.join(gitdir, "logs", "HEAD")):
        try:
            st = os.stat(path) if path else None
            out.append(st and (st.st_ino, st.st_mtime_ns, st.st_size))
        except OSError:
            out.append(None)
    return tuple(out)


def head(root: str) -> str | None:
    try:
        out = system_git.run_sync(root, "rev-parse", "-q", "--verify", "HEAD", timeout=10)
    except (OSError, system_git.GitTimeout):
        return None
    return out.out.decode(errors="replace").strip() or None


def reachable(root: str, until: str) -> list[str] | None:
    """The hashes HEAD reaches, newest first (at most MAX_COMMITS); None when git fails."""
    try:
        out = system_git.run_sync(root, "rev-list", f"--max-count={MAX_COMMITS}", until, timeout=60)
    except (OSError, system_git.GitTimeout):
        return None
    return out.out.decode(errors="replace").split() if out.rc == 0 else None


def commits(root: str, hashes: list[str]) -> list[Commit]:
    """These commits, in the order given: the newest DIFF_COMMITS with their diff hunks."""
    with_diff, plain = hashes[:DIFF_COMMITS], hashes[DIFF_COMMITS:]
    out = _log(root, with_diff, ["-p", "--unified=0", "--diff-merges=off"]) if with_diff else []
    return out + (_log(root, plain, ["--name-only"]) if plain else [])


def _log(root: str, hashes: list[str], how: list[str]) -> list[Commit]:
    try:
        out = system_git.run_sync(root, *LOG, *how, input="\n".join(hashes).encode(), timeout=300)
    except (OSError, system_git.GitTimeout):
        return []
    if out.rc != 0:
        return []
    found = []
    for record in out.out.decode("utf-8", "replace").split(RS)[1:]:
        fields = record.split(US)
        if len(fields) < 5:
            continue
        h, date, subject, body, rest = fields[:5]
        paths, diff = _patch(rest) if "-p" in how else ([p for p in rest.split("\n") if p.strip()], "")
        found.append(Commit(h, date, subject, body.strip()[:MAX_BODY], tuple(paths[:MAX_PATHS]), diff))
    return found


def _patch(text: str) -> tuple[list[str], str]:
    """(changed paths, the added and removed lines without their +/-, at most MAX_DIFF_CHARS)."""
    paths: list[str] = []
    kept: list[str] = []
    size = 0
    for line in text.split("\n"):
        if line.startswith("diff --git "):
            # "diff --git a/x b/x": the b/ side is the path now (a rename's new name).
            b = line.rfind(" b/")
            if b > 0:
                paths.append(line[b + 3:])
        elif line.startswith(("+++ ", "--- ")):
            continue
        elif line.startswith(("+", "-")) and size < MAX_DIFF_CHARS and line[1:].strip():
            piece = line[1:MAX_DIFF_LINE].strip()
            kept.append(piece)
            size += len(piece) + 1
    return paths, "\n".join(kept)[:MAX_DIFF_CHARS]


def reconcile(indexed: Iterable[str], now: list[str]) -> tuple[list[str], list[str]]:
    """(hashes to add, newest first; hashes to drop): the index made equal to what HEAD reaches."""
    have = set(indexed)
    reach = set(now)
    return [h for h in now if h not in have], [h for h in have if h not in reach]
