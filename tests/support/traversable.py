"""Directories other users may pass through, for a test that runs this checkout as another user."""

from pathlib import Path


def _traversable(paths: list[Path]) -> list[tuple[Path, int]]:
    """Let other users pass through (x, not r) every directory above these paths: a checkout
    made by `mktemp -d` or under /root is 0700, and the user must load this checkout's installed
    packages and run its fixtures. Returns the modes to put back."""
    changed = []
    for path in paths:
        for d in [path, *path.parents]:
            mode = d.stat().st_mode & 0o7777
            if d.is_dir() and not mode & 0o001 and d not in dict(changed):
                changed.append((d, mode))
                d.chmod(mode | 0o001)
    return changed
