"""The same pytest check collected at the item's base and at its branch, in runner-owned
checkouts (.collect-<item>[-base] beside the worktrees) with the check's own environment and
sandbox, to see whether the branch stopped running a test the base ran (runner/core/work/weaken.py).

Collection only (`--collect-only` through PYTEST_ADDOPTS, so a check that runs pytest from a
script is collected too): no test body runs, a 500-test suite costs two collections."""

import asyncio
import os

from plugkit.work import scopes
from runner.core.work import git
from runner.core.work.weaken import Collected
from runner.executors.base import ExecSpec

PLUGIN = os.path.join(os.path.dirname(__file__), "collect_plugin.py")
_DIR = ".plugkit-collect"  # inside the checkout: the sandbox writes only its cwd


def collect_env(environ: dict[str, str], where: str) -> dict[str, str]:
    """The check's environment plus what loads the plugin and where it writes."""
    plugin_dir = os.path.join(where, _DIR)
    path = environ.get("PYTHONPATH")
    return {**environ,
            "PYTEST_ADDOPTS": f"{environ.get('PYTEST_ADDOPTS', '')} --collect-only -p plugkit_collect".strip(),
            "PYTHONPATH": plugin_dir + (os.pathsep + path if path else ""),
            "PLUGKIT_COLLECT_OUT": os.path.join(plugin_dir, "out.jsonl")}


def plant(where: str) -> str:
    """Writes the plugin into the checkout; returns where its rows will be."""
    plugin_dir = os.path.join(where, _DIR)
    os.makedirs(plugin_dir, exist_ok=True)
    with open(PLUGIN, encoding="utf-8") as src, \
            open(os.path.join(plugin_dir, "plugkit_collect.py"), "w", encoding="utf-8") as dst:
        dst.write(src.read())
    return os.path.join(plugin_dir, "out.jsonl")


def read(out: str) -> Collected:
    try:
        with open(out, encoding="utf-8") as fh:
            return Collected.parse(fh.read())
    except OSError:
        return Collected()


async def _one(p, session_id: str, root: str, where: str, sha: str, check: str, cfg, sandbox: bool) -> Collected:
    await git.checkout(root, where, sha)
    try:
        out = await asyncio.to_thread(plant, where)
        caller = p.env if "PATH" in p.env else {**os.environ, **p.env}
        environ = collect_env(scopes.check_env(caller, cfg.work_credentials), where)
        task = await p.tasks.exec(ExecSpec(session_id=session_id, cwd=where, lang=cfg.verify_lang, code=check,
                                           timeout_s=cfg.verify_timeout_s, environ=environ, sandbox=sandbox))
        await task.done.wait()
        return await asyncio.to_thread(read, out)
    finally:
        await git.remove_worktree(root, where)


async def both(p, session_id: str, item_id: str, base: str, sha: str, check: str, cfg,
               sandbox: bool) -> tuple[Collected, Collected]:
    """(collected at base, collected at sha), the two collections side by side."""
    root = p.ws.root
    at = os.path.join(root, ".plugkit", "worktrees", f".collect-{item_id}")
    got = await asyncio.gather(_one(p, session_id, root, at + "-base", base, check, cfg, sandbox),
                               _one(p, session_id, root, at, sha, check, cfg, sandbox))
    return got[0], got[1]
