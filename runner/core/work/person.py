"""What a person does to a run from their terminal: roll a landed item back, let an item's branch
change its own check. WorkManager's methods (bound there: `m` is the manager; not imported here, which would be a
cycle); kept apart from the driving of runs."""

import asyncio
from typing import Any, Optional

from plugkit.lifecycle import item_ops
from plugkit.refusals import Conflict, Forbidden, NotFound
from plugkit.vocab import WORK_REJECTED as REJECTED
from runner.core.work import git
from runner.core.work.model import Run
from runner.system import logs, peers

log = logs.get("plugkit.work")


async def rollback(m: Any, session_id: str, cwd: str, item_id: str,
                   run_id: Optional[str] = None) -> tuple[str, str]:
    run = m.find_run(m.root_of(session_id, cwd), run_id)
    it = m.item(run, item_id)
    if it.landed is None or it.rollback_tag is None:
        raise Conflict(f"{item_id} has no rollback point: only high and critical items are tagged before "
                       f"they land{'' if it.landed is None else f'; undo it with git revert {it.landed[:12]}'}")
    if run.workspace in m.drivers:
        raise Conflict(f"run {run.id} is still live: `plugkit work stop` first, then roll back")
    ws = m.gates.workspace(session_id, cwd)
    try:
        tip = await git.tip(run.workspace, run.branch)
        head = await git.rollback(run.workspace, run.branch, it.rollback_tag, it.landed, run.merge)
    except git.GitError as exc:
        raise Conflict(f"rollback of {item_id} failed: {exc}") from None
    how = "reset" if tip == it.landed else "revert"
    await m.gates.set_status(ws, item_id, "pending")
    # What the person approved was this landing: running the item again needs a new approval.
    revoked = await m.gates.call(ws, item_ops.approval_revoke, item_id)
    it.enter(REJECTED, m.clock(), "rolled_back", f"rolled back ({how}); {run.branch} is at {head[:12]}"
             + ("; its approval is revoked (`plugkit approve " + item_id + "` before it runs again)"
                if revoked else ""))
    it.landed = None
    m.store.save(run)
    log.warning("work_item_rolled_back", run=run.id, item=item_id, how=how)
    return head, how

async def allow_check(m: Any, session_id: str, cwd: str, item_id: str, peer: Optional[tuple], port: int,
                      runner_pid: int) -> Run:
    """A person lets an item's branch change its own check (held blocked/touches_check until then).
    Judged like an approval, by the caller's process ancestry: a worker or an agent is refused."""
    run = m.run_of(session_id, cwd)
    listing = await m.gates.read(m.gates.workspace(session_id, cwd), item_ops.prd_list)
    if item_id not in {i.id for i in listing.items}:
        raise NotFound(f"no work item {item_id} in .prd (`plugkit prd list`)")
    who = await asyncio.to_thread(peers.caller, peer, port, runner_pid)
    verdict = m.gates.desk.judge(run.workspace, item_id, who)
    if not verdict.ok or who is None:
        log.warning("work_allow_check_refused", run=run.id, item=item_id, why=verdict.reason,
                    chain=list(who.chain) if who else None)
        raise Forbidden(f"allow-check refused: {verdict.reason}. A person allows it from their own "
                        f"terminal: `plugkit work allow-check {item_id}`")
    run.check_allowed[item_id] = f"{who.user} ({verdict.channel}{', ' + who.tty if who.tty else ''})"
    m.store.save(run)
    log.warning("work_check_allowed", run=run.id, item=item_id, by=run.check_allowed[item_id])
    return run
