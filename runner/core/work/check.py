"""The files of an item's check, and whether its branch changed them.

The runner runs the verify command on the item's commits, so a worker that commits
`check.sh` = `exit 0` would be judged by its own check. The check is the person's: the
verify command comes from the person's checkout (.prd, .plugkit/config.toml; a branch
changing those never lands), and the files it runs are held to the attempt's base:

- every word of the verify command naming a file or directory that exists in the base
  commit (`sh check.sh`, `pytest tests/test_api.py`, `python -m pytest tests`);
- every path the project names in `.plugkit/config.toml`: `work_check_paths = ["tests/"]`
  (a directory stands for all under it), for what the command runs without naming it.

A branch that changes any of them is held (blocked/touches_check, with the diff) unless a
person allowed that item to change its check (`plugkit work allow-check ITEM`).
"""

import os
import re
import shlex

from runner.core.work import git

DIFF_CHARS = 1200
_NOT_A_PATH = re.compile(r"[$`*?\[\]{}<>|;&()=]")


def _words(command: str) -> list[str]:
    try:
        words = shlex.split(command, comments=True)
    except ValueError:  # unbalanced quotes: the plain words still name files
        words = [w.strip("'\"") for w in command.split()]
    out = []
    for w in words:
        w = w.split("::", 1)[0]  # pytest's node ids: tests/test_a.py::test_b
        if w.startswith("-") or _NOT_A_PATH.search(w) or not w:
            continue
        w = os.path.normpath(w)
        if w in (".", "..") or w.startswith(("../", "/")):
            continue
        out.append(w)
    return out


async def files(root: str, base: str, command: str, configured: tuple[str, ...]) -> list[str]:
    """The check's files: what the command names that exists at `base`, and what the project names."""
    named: list[str] = []
    words = sorted(set(_words(command)))
    if words:
        out = await git.run(root, "--literal-pathspecs", "ls-tree", "-z", "--name-only", base, "--", *words)
        named = [p for p in out.split("\0") if p]
    return sorted(set(named) | {os.path.normpath(p) for p in configured if p.strip()})


async def touched(root: str, base: str, branch: str, paths: list[str]) -> tuple[list[str], str]:
    """(the check's files the branch changes, their diff cut to DIFF_CHARS)."""
    if not paths:
        return [], ""
    spec = ("--literal-pathspecs", "diff", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color")
    changed = (await git.run(root, *spec, "--name-only", f"{base}..{branch}", "--", *paths)).splitlines()
    if not changed:
        return [], ""
    diff = await git.run(root, *spec, "--unified=1", f"{base}..{branch}", "--", *changed)
    return changed, diff if len(diff) <= DIFF_CHARS else diff[:DIFF_CHARS] + "\n[... cut]"
