"""What the hooks answer inside a `plugkit work` worker's worktree (the domain: runner/rpc/hook.py
only routes a worker's hook call here and shapes the answer).

A worker is held by the runner, not by the workspace's phase gates: its item is its plan
and the runner's own verify run is its evidence. So its PreToolUse answer is the
destructive-command policy (plugkit/work/policy/: deny), its Stop is turned back once
while nothing is committed or the tree is dirty (the runner lands commits only), and its
context says which item it works on and what closes it.

The same answers for a worker this runner hosts for a supervisor elsewhere (a Ray node's
runner: runner/core/work/hosted.py): `it` is then a Hosted, whose fields these functions read
have ItemRun's names, and its commits are counted from the commit it started at (the node's
clone has no run branch to count from).
"""

import asyncio
import os
from typing import Optional

from plugkit.work import policy
from runner.core.work import git
from runner.core.work.hosted import Hosted
from runner.core.work.model import ItemRun
from runner.system import logs, worker_refs

log = logs.get("plugkit.work")


Worker = ItemRun | Hosted


def pre_tool(it: Worker, cwd: str, tool_name: str, tool_input: dict) -> tuple[str, str]:
    if it.worktree is None:
        return "allow", ""
    try:
        denial = policy.judge(tool_name, tool_input, os.path.realpath(cwd), it.worktree)
    except Exception:  # an unattended worker runs with the host's prompts off: fail closed, not open
        log.exception("work_policy_error", item=it.id, tool=tool_name)
        return "deny", "plugkit work could not judge this call, so it is refused; do it another way"
    return ("deny", denial.reason) if denial is not None else ("allow", "")


# The input field that says what a tool call does, first found wins (the hosts' own names).
SUMMARY_KEYS = ("command", "cmd", "file_path", "filePath", "path", "absolute_path", "notebook_path", "pattern",
                "url", "query", "prompt", "description")


def summary(tool_input: dict) -> str:
    """A tool call's input in one short line, for the attempt's trace."""
    for key in SUMMARY_KEYS:
        value = tool_input.get(key)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):  # an argv
            value = " ".join(value)
        if isinstance(value, str) and value.strip():
            line = " ".join(value.split())
            return line[:117] + "..." if len(line) > 120 else line
    return ", ".join(sorted(tool_input)[:5])


def denied_code(it: Worker, lang: str, code: str, cwd: str) -> Optional[str]:
    if it.worktree is None:
        return None
    denial = policy.judge_code(lang, code, os.path.realpath(cwd), it.worktree)
    return denial.reason if denial is not None else None


async def stop(it: Worker, repo: str, base: str) -> tuple[bool, str]:
    """Turned back once per attempt while its branch is not ahead of `base` in `repo` (the run's
    branch in its workspace; for a hosted attempt, the commit it started at in its worktree)."""
    if it.worktree is None or it.branch is None or it.stop_blocked >= it.attempt:
        return False, ""
    found = await asyncio.to_thread(worker_refs.read, it.worktree, it.branch)
    if found.given is not None and found.tip != found.given:
        # It committed: its branch moved in its own refs dir (runner/system/worker_refs.py), which the
        # runner's git reads only once it has ended; its new commits are in its own object dir too.
        return False, ""
    try:
        dirty = await git.worker_dirty(it.worktree)
        ahead = await git.commits_ahead(repo, base, it.branch)
    except git.GitError:
        return False, ""
    if not dirty and ahead:
        return False, ""
    it.stop_blocked = it.attempt  # once per attempt: a worker that cannot commit must still stop
    what = (f"{len(dirty)} uncommitted change(s) ({', '.join(dirty[:3])})" if dirty else "nothing committed")
    return True, (f"plugkit work: {what} on {it.branch}; commit your work (git add -A && git commit -m "
                  f"'{it.id}: ...') before you stop: the runner verifies and lands commits only")


def context_lines(it: Worker) -> list[str]:
    where = "on your commits" if isinstance(it, Hosted) else "on a fresh checkout of your commits (nothing else)"
    return [f"plugkit work: you are the worker for item {it.id} (attempt {it.attempt}) on branch "
            f"{it.branch} in {it.worktree}",
            f"when you stop, the runner runs the item's verify command {where} and lands your commits only "
            "if it passes; work only inside this worktree, commit before you stop"]
