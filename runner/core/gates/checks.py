"""An item's check as the runner witnesses it, and what a prd.update is judged with.

`run_check` (prd.verify) runs the item's check (its `verify`, else the workspace's) as a task
in the workspace and seals a receipt naming the git HEAD it ran at: the only kind of receipt
that completes an item in a repository (plugkit.lifecycle.item_states). HEAD is read before
and after; a commit during the run leaves the receipt without one, since the run checked
neither commit for sure.

`person` asks the approvals' own judgement (peers.caller + ApprovalDesk.judge, as
approval.grant does), so whatever counts as a person there counts here.
"""

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Protocol, TypeVar

from plugkit.lifecycle import item_ops, item_states, prd
from plugkit.lifecycle.config import GateConfig
from plugkit.lifecycle.errors import Conflict
from plugkit.lifecycle.evidence import Receipt
from plugkit.lifecycle.gating import load_items
from plugkit.lifecycle.workspace import Workspace
from runner.core.gates.approvals import ApprovalDesk
from runner.core.gates.witness import git_facts, witness
from runner.core.tasks.manager import TaskManager
from runner.core.tasks.task import Task
from runner.executors.base import ExecSpec
from runner.system import peers

T = TypeVar("T")


class Gates(Protocol):
    """What these checks use of the gate manager, which calls them: named here, so the manager
    is not imported back (runner.core.gates.manager <-> checks was an import cycle)."""

    tasks: TaskManager
    desk: ApprovalDesk
    counters: Counter
    clock: Callable[[], float]

    async def call(self, ws: Workspace, fn: Callable[..., T], *args: Any) -> T: ...

    async def read(self, ws: Workspace, fn: Callable[..., T], *args: Any) -> T: ...

    def config(self, ws: Workspace) -> GateConfig: ...


@dataclass(frozen=True)
class Asker:
    """Who holds the other end of the RPC connection, for the runner to find (never what it says)."""

    peer: Optional[tuple]
    port: int
    runner_pid: int


@dataclass(frozen=True)
class CheckRun:
    check: str
    task: Task
    receipt: Receipt
    green: bool


async def site(gates: Gates, ws: Workspace, with_git: bool) -> item_states.Site:
    """A repository without a commit yet has no HEAD to pin a run to: judged as no repository."""
    cfg = gates.config(ws)
    git = await git_facts(ws.root) if with_git else None
    if git is not None and git.error:  # never judge a completion blind: git's view is part of it
        raise Conflict(f"cannot read the git HEAD to judge the completion against ({git.error}); retry")
    return item_states.Site(verify=cfg.verify, lang=cfg.verify_lang, repo=bool(git and git.repo and git.head),
                            head=git.head if git else None)


async def person(gates: Gates, ws: Workspace, item_id: str, new_check: Optional[str],
                 site: item_states.Site, asker: Optional[Asker]) -> Optional[item_states.Person]:
    """The caller judged as approval.grant judges it, only when the update would change a check
    the item has (None: no judgement needed; the model checks again under the lock)."""
    if new_check is None:
        return None
    current = item_states.check_of(prd.get(await gates.read(ws, load_items), item_id), site)
    if current is None or new_check == current:
        return None
    if asker is None:  # the runner's own callers (plugkit work) never change a check
        return item_states.Person()
    who = await asyncio.to_thread(peers.caller, asker.peer, asker.port, asker.runner_pid)
    verdict = gates.desk.judge(ws.root, item_id, who)
    return item_states.Person(verdict.ok, verdict.reason)


async def run_check(gates: Gates, session_id: str, ws: Workspace, item_id: str,
                    environ: Optional[Mapping[str, str]] = None) -> CheckRun:
    cfg = gates.config(ws)
    item = prd.get(await gates.read(ws, load_items), item_id)
    check = item.verify or cfg.verify
    if not check:
        raise Conflict(f"{item_id} has no check: add one (`plugkit prd update {item_id} --verify CMD`) "
                       "or set verify in .plugkit/config.toml")
    before = (await git_facts(ws.root)).head
    task = await gates.tasks.exec(ExecSpec(session_id=session_id, cwd=ws.root, lang=cfg.verify_lang, code=check,
                                           timeout_s=cfg.verify_timeout_s, environ=environ))
    await task.done.wait()
    after = (await git_facts(ws.root)).head
    seen = await witness(gates.tasks, task, command=check, environ=environ)
    green = task.state == "completed" and task.exit_code == 0
    note = f"{item_id}'s check: task_{task.id} {task.message}" + ("" if before == after else
                                                                  "; HEAD moved while it ran")
    receipt = await gates.call(ws, item_ops.evidence_add, seen, None, f"check:{item_id}", note[:2000], gates.clock(),
                               before if before == after else None)
    gates.counters["item_checks"] += 1
    return CheckRun(check, task, receipt, green)
