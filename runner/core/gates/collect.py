"""The same pytest check collected at two points, to see whether the later stopped running a
test the earlier ran (runner/core/gates/weaken.py): a commit in a runner-owned detached checkout
(the plugin written inside it: a sandbox writes only its cwd), or a working tree as it stands
(the plugin beside it, in a temporary directory), with the check's own environment.

Collection only (`--collect-only` through PYTEST_ADDOPTS, so a check that runs pytest from a
script is collected too): no test body runs, a 500-test suite costs two collections."""

import asyncio
import os
import secrets
import shutil
import tempfile
from typing import Mapping, Optional

from plugkit import confined
from runner.core.gates import weaken
from runner.core.gates.weaken import Collected
from runner.executors.base import ExecSpec
from runner.system import git as system_git

_DIR = ".plugkit-collect"
OUT = "out.jsonl"
MAX_REPORT = 64 << 20  # of collected test ids: a project of a million tests stays under it
# The pytest plugin written beside a checkout (as text: the runner never imports it; it runs in
# the check's own pytest) to list, without running a test, what the check collects: each test's
# id and whether it is deselected, skipped or xfailed where it stands, into out.jsonl beside it.
PLUGIN_SOURCE = '''\
import json
import os

_DESELECTED: list[str] = []


def pytest_deselected(items):
    _DESELECTED.extend(item.nodeid for item in items)


def _marked(item, name):
    try:  # pytest's own evaluation of skip/skipif/xfail, conditions included
        from _pytest import skipping
        found = getattr(skipping, f"evaluate_{name}_marks")(item)
    except Exception:  # an older or newer pytest: the marker alone
        found = item.get_closest_marker(name) or (name == "skip" and item.get_closest_marker("skipif"))
    return found is not None and found is not False


def pytest_collection_finish(session):
    row = {"collected": {item.nodeid: ("skip" if _marked(item, "skip") else "xfail" if _marked(item, "xfail")
                                       else "run") for item in session.items},
           "deselected": list(_DESELECTED),
           "errors": int(getattr(session, "testsfailed", 0))}
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "out.jsonl"), "a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\\n")
'''


def collect_env(environ: Mapping[str, str], plugin_dir: str) -> dict[str, str]:
    """The check's environment plus what loads the plugin and where it writes."""
    path = environ.get("PYTHONPATH")
    return {**environ,
            "PYTEST_ADDOPTS": f"{environ.get('PYTEST_ADDOPTS', '')} --collect-only -p plugkit_collect".strip(),
            "PYTHONPATH": plugin_dir + (os.pathsep + path if path else "")}


def plant(where: str) -> str:
    """Writes the plugin into `where`/.plugkit-collect; returns that directory."""
    plugin_dir = os.path.join(where, _DIR)
    os.makedirs(plugin_dir, exist_ok=True)
    with open(os.path.join(plugin_dir, "plugkit_collect.py"), "w", encoding="utf-8") as fh:
        fh.write(PLUGIN_SOURCE)
    return plugin_dir


def read(plugin_dir: str) -> Collected:
    """What the plugin wrote. The checkout it lies in is the collected code's to write: a FIFO or a
    link left there is not read (confined), and an unread report proves no test kept."""
    data = confined.read_in(plugin_dir, OUT, MAX_REPORT)
    return Collected.parse(data.decode("utf-8", "replace")) if data is not None else Collected()


async def checkout(root: str, where: str, sha: str) -> None:
    """A detached checkout of `sha` at `where`, under the repository's worktree registry."""
    await system_git.checkout(root, where, sha)


async def remove(root: str, where: str) -> None:
    await system_git.drop(root, where)


async def at(tasks, session_id: str, root: str, where: str, sha: Optional[str], check: str, cfg,
             environ: Optional[Mapping[str, str]], sandbox: bool = False) -> Collected:
    """The check collected at commit `sha` checked out at `where` (removed after), or with sha
    None in the working tree `where` as it stands."""
    scratch = None
    if sha is not None:
        await checkout(root, where, sha)
    else:
        scratch = await asyncio.to_thread(tempfile.mkdtemp, prefix="plugkit-collect-")
    try:
        plugin_dir = await asyncio.to_thread(plant, where if scratch is None else scratch)
        env = collect_env(environ if environ is not None else os.environ, plugin_dir)
        task = await tasks.exec(ExecSpec(session_id=session_id, cwd=where, lang=cfg.verify_lang, code=check,
                                         timeout_s=cfg.verify_timeout_s, environ=env, sandbox=sandbox))
        await task.done.wait()
        return await asyncio.to_thread(read, plugin_dir)
    finally:
        if scratch is None:
            await remove(root, where)
        else:
            await asyncio.to_thread(shutil.rmtree, scratch, True)


async def weakened(tasks, session_id: str, root: str, base: str, sha: Optional[str], check: str, cfg,
                   environ: Optional[Mapping[str, str]], sandbox: bool = False) -> tuple[list[str], str]:
    """(the evidence that `sha` (None: the working tree of `root`) weakens the check since
    `base`, what it does): its runner's configuration changed, else (pytest) a test the base ran
    no longer run. Both collections side by side, the base's in .plugkit/worktrees/.collect-*."""
    evidence, which = await weaken.config_changes(root, base, sha, check)
    if evidence:
        return evidence, "changes what configures its test runner"
    if "pytest" not in which:
        return [], ""
    # Its own name: two checks at once (parallel items, two prd verify calls) never share one.
    where = os.path.join(root, ".plugkit", "worktrees", f".collect-{(sha or 'tree')[:12]}-{secrets.token_hex(4)}")
    got = await asyncio.gather(at(tasks, session_id, root, where + "-base", base, check, cfg, environ, sandbox),
                               at(tasks, session_id, root, where if sha else root, sha, check, cfg, environ, sandbox))
    return weaken.weakened(got[0], got[1]), "runs fewer of the tests its base ran"
