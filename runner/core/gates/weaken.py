"""Whether a branch weakens its own check without touching the files the command names.

A test runner reads configuration the check command never names (a `conftest.py` that
deselects, `addopts` in pyproject, a `.pth` file, a jest config), and a test can be deleted or
marked skip. So for the runners recognised here the runner compares the branch with the base:
a changed runner configuration is held with the diff's file names, and for pytest the same
check is collected at both commits (`--collect-only` with a plugin: cheap, nothing runs) and a
test the base ran that the branch no longer collects, deselects, skips or xfails is held.
Adding tests is not weakening: a branch's new tests are welcome.
"""

import asyncio
import configparser
import json
import re
import tomllib
from dataclasses import dataclass, field
from typing import Optional

from plugkit import confined
from runner.system import git as system_git

WORKING_TREE_LIMIT = 4 << 20  # of a runner's config file read from the working tree

_PYTEST_CMD = re.compile(r"\b(pytest|py\.test|tox|nox)\b")
_NODE_CMD = re.compile(r"\b(jest|vitest|npm|yarn|pnpm|npx)\b|\bnode\s+[^;&|]*--test\b")
_GO_CMD = re.compile(r"\bgo\s+test\b")
_CARGO_CMD = re.compile(r"\bcargo\s+(test|nextest)\b")
GitError = system_git.GitError


async def git(cwd: str, *args: str) -> str:
    """git's stdout, through the runner's one adapter (its environment rule, no hooks or fsmonitor)."""
    return await system_git.out(cwd, *args)


# A file that configures the runner whatever its content: (runner, matches a path).
_WHOLE = [("pytest", re.compile(r"(^|/)(conftest\.py|pytest\.ini|\.pytest\.ini|tox\.ini)$")),
          ("python", re.compile(r"(^|/)(sitecustomize\.py|usercustomize\.py|[^/]+\.pth)$")),
          ("node", re.compile(r"(^|/)(jest|vitest|vite)\.config\.[cm]?[jt]s(on)?$|(^|/)\.?jest(rc)?(\.json)?$")),
          ("go", re.compile(r"^go\.mod$")),
          ("cargo", re.compile(r"^(\.cargo/config(\.toml)?|\.config/nextest\.toml)$"))]


def runners(command: str, base_files: list[str]) -> set[str]:
    """The runners this check may run: named by its command, or configured in the base tree."""
    found = {"python"}  # sitecustomize and .pth run inside any Python the check starts
    if _PYTEST_CMD.search(command) or any(re.search(r"(^|/)(conftest\.py|pytest\.ini)$", p) for p in base_files):
        found.add("pytest")
    if _NODE_CMD.search(command):
        found.add("node")
    if _GO_CMD.search(command):
        found.add("go")
    if _CARGO_CMD.search(command):
        found.add("cargo")
    return found


def _pyproject(text: str) -> object:
    try:
        return tomllib.loads(text).get("tool", {}).get("pytest")
    except tomllib.TOMLDecodeError:
        return text  # unreadable: any change of it counts


def _setup_cfg(text: str) -> object:
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(text)
    except configparser.Error:
        return text
    return dict(parser["tool:pytest"]) if parser.has_section("tool:pytest") else None


def _package_json(text: str) -> object:
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if not isinstance(data, dict):
        return text
    scripts = data.get("scripts") if isinstance(data.get("scripts"), dict) else {}
    return {"test": {k: v for k, v in scripts.items() if k == "test" or k.startswith(("test:", "pretest"))},
            "jest": data.get("jest"), "vitest": data.get("vitest")}


# A file only part of which configures the runner: (runner, path, the part).
_PART = [("pytest", "pyproject.toml", _pyproject, "[tool.pytest]"),
         ("pytest", "setup.cfg", _setup_cfg, "[tool:pytest]"),
         ("node", "package.json", _package_json, "the test script or jest/vitest config")]


async def _show(root: str, rev: Optional[str], path: str) -> str:
    """`path` at commit `rev`, or in the working tree with rev None; "" where it is absent."""
    if rev is None:
        # Through confined, off the event loop: a FIFO left in place of pyproject.toml (an
        # `exec --sandbox` task or an agent can write the working tree) held a plain open() for
        # ever, and with it every request of the runner. What it will not read (a link, a FIFO)
        # reads as nothing: a change, so the check is held, never waved through.
        data = await asyncio.to_thread(confined.read_in, root, path, WORKING_TREE_LIMIT)
        return data.decode("utf-8", "replace") if data is not None else ""
    try:
        return await git(root, "show", f"{rev}:{path}")
    except GitError:
        return ""


async def config_changes(root: str, base: str, branch: Optional[str], command: str) -> tuple[list[str], set[str]]:
    """(the runner configuration `branch` changes since `base`, each as `path` or `path part`;
    the runners this check may run). With branch None: the working tree, untracked files too."""
    base_files = (await git(root, "ls-tree", "-r", "--name-only", "-z", base)).split("\0")
    which = runners(command, base_files)
    if branch is None:
        changed = (await git(root, "diff", "--name-only", "--no-renames", "-z", base)).split("\0") + \
            (await git(root, "ls-files", "-z", "--others", "--exclude-standard")).split("\0")
    else:
        changed = (await git(root, "diff", "--name-only", "--no-renames", "-z", f"{base}..{branch}")).split("\0")
    out = [p for p in changed if p and any(r in which and rx.search(p) for r, rx in _WHOLE)]
    for runner, path, part, name in _PART:
        if runner in which and path in changed:
            if part(await _show(root, base, path)) != part(await _show(root, branch, path)):
                out.append(f"{path} {name}")
    return out, which


@dataclass
class Collected:
    """What pytest collected at one commit: test id -> "run" | "skip" | "xfail", and the deselected."""
    tests: dict[str, str] = field(default_factory=dict)
    deselected: set[str] = field(default_factory=set)
    seen: bool = False  # pytest ran at all (the plugin wrote a row)

    @classmethod
    def parse(cls, text: str) -> "Collected":
        out = cls()
        for line in text.splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            out.seen = True
            out.tests.update(row.get("collected", {}))
            out.deselected.update(row.get("deselected", []))
        return out


def weakened(base: Collected, branch: Collected) -> list[str]:
    """Each test the base ran that the branch no longer runs, with how: the evidence."""
    if not base.seen:
        return []
    out = []
    for test, how in sorted(base.tests.items()):
        if how != "run":
            continue
        now = branch.tests.get(test)
        if now == "run":
            continue
        how = "deselected" if test in branch.deselected else "disappeared" if now is None else \
            "newly skipped" if now == "skip" else "newly xfailed"
        out.append(f"{test} {how}")
    return out
