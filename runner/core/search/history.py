"""A repository's history as commits (subject, body, changed paths), read with `git log`;
incremental from the last indexed HEAD so a new commit costs one short log."""

import subprocess

from runner.core.search.store import Commit

MAX_COMMITS = 20_000
MAX_BODY = 2000
RS, US = "\x1e", "\x1f"
FORMAT = f"--format={RS}%H{US}%aI{US}%s{US}%b{US}"


def git_dir(root: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", root, "rev-parse", "--absolute-git-dir"], capture_output=True,
                             timeout=10, text=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def head(root: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", root, "rev-parse", "-q", "--verify", "HEAD"],
                             capture_output=True, timeout=10, text=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def log(root: str, since: str | None, until: str) -> list[Commit] | None:
    """Commits in since..until (all up to until when since is None); None when git fails
    (since rewritten away: the caller reindexes from scratch)."""
    rng = f"{since}..{until}" if since else until
    try:
        out = subprocess.run(["git", "-C", root, "log", "--no-color", "--name-only", f"-n{MAX_COMMITS}", FORMAT, rng],
                             capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    commits = []
    for record in out.stdout.decode("utf-8", "replace").split(RS)[1:]:
        fields = record.split(US)
        if len(fields) < 5:
            continue
        h, date, subject, body, names = fields[:5]
        paths = tuple(p for p in names.split("\n") if p.strip())
        commits.append(Commit(h, date, subject, body.strip()[:MAX_BODY], paths[:200]))
    return commits
