"""The runner's own evidence for an item and its landing: the check run on a fresh checkout of
the branch's commit, the landing on the run's branch under the one landing lock, the receipt.
A base of Attempts (runner/core/work/attempt.py), which holds the state these read."""

import asyncio
import os
from typing import Any, Callable

from plugkit.lifecycle import item_ops, prd
from plugkit.vocab import WORK_REJECTED as REJECTED
from plugkit.work import scopes
from runner.core.gates.witness import witness
from runner.core.tasks.task import Task
from runner.core.work import git
from runner.core.work.model import Failed, ItemRun, Run
from runner.core.work.queue import LandingQueue, hunks
from runner.core.work.refs import RefGuard
from runner.executors.base import ExecSpec
from runner.system import logs

log = logs.get("plugkit.work")
TAGGED_RISKS = frozenset({"high", "critical"})
TAIL_BYTES, TAIL_LINES = 2048, 12  # of a red check's output, shown to the next attempt


class Landing:
    p: Any  # attempt.Plumbing (not imported: attempt imports this module)
    run: Run
    refs: RefGuard
    land_lock: asyncio.Lock
    queue: LandingQueue
    checked_at: dict[int, str]
    check_dir: Callable[[ItemRun], str]

    async def _verify(self, it: ItemRun, check: str, cfg, sha: str) -> Task:
        """The check, run by the runner on a fresh checkout of `sha`: the evidence, not the worker's
        word, on exactly the committed tree (the receipt names `sha`)."""
        p = self.p
        assert it.session_id is not None
        where = self.check_dir(it)
        await git.checkout(p.ws.root, where, sha)
        # The check runs the worker's code (what its tests import): it holds what the worker held,
        # the caller's PATH and venv but only its credential scopes (plugkit/work/scopes.py), and
        # in the worker's sandbox it reads no more of the runner's files than the worker.
        caller = p.env if "PATH" in p.env else {**os.environ, **p.env}
        environ = scopes.check_env(caller, p.gates.config(p.ws).work_credentials)
        task = await p.tasks.exec(ExecSpec(session_id=it.session_id, cwd=where, lang=cfg.verify_lang,
                                           code=check, timeout_s=cfg.verify_timeout_s, environ=environ,
                                           sandbox=self.run.sandbox))
        it.verify_task_id = task.id
        await task.done.wait()
        self.checked_at[task.id] = sha
        green = task.state == "completed" and task.exit_code == 0
        it.verify = "green" if green else "red"
        if not green:
            tail = "".join(text for _stream, text in p.tasks.read(task, max(0, task.buffer.end - TAIL_BYTES),
                                                                     TAIL_BYTES).chunks)
            raise Failed(REJECTED, "verify_failed", f"`{check}` {task.message} on {sha[:12]} (its commits only) "
                                                      f"(task_{task.id}); `plugkit work logs {it.id} --verify`",
                         "\n".join(tail.splitlines()[-TAIL_LINES:]))
        return task

    async def _land(self, it: ItemRun, item: prd.Item, check: str, cfg, verified: Task) -> None:
        """Queues the green branch (runner/core/work/queue.py); in its turn, under the landing lock,
        integrates it with the latest tip, checks the result again if the tree changed, lands, then
        completes the item: the completion's receipt must name the HEAD it checked, and the next item
        to land would move it. A conflict or a red check on the integrated tree evicts it."""
        p, run = self.p, self.run
        assert it.branch is not None
        entry = self.queue.join(it, self.checked_at[verified.id])
        async with self.queue.turn(entry), self.land_lock:
            self.queue.move(entry, "rebasing")
            try:
                done = await git.integrate(p.ws.root, self.check_dir(it), it.branch, run.branch, run.merge,
                                           f"plugkit work: {it.id} {item.subject[:60]}", self.checked_at[verified.id])
            except git.MergeConflict as exc:
                if not exc.files:
                    raise
                raise self.queue.evict(entry, it, f"conflicts with what landed before it in "
                                                  f"{', '.join(exc.files[:5])[:200]}", hunks(exc.texts)) from None
            # The item's branch (rebased, for ff) is the runner's move: no other worker's doing.
            self.refs.ours(f"refs/heads/{it.branch}", await git.tip(p.ws.root, it.branch))
            if done.changed:  # rebased onto (or merged with) what landed meanwhile: check that tree too
                self.queue.move(entry, "checking")
                try:
                    verified = await self._verify(it, check, cfg, done.sha)
                except Failed as f:
                    if f.reason != "verify_failed":
                        raise
                    raise self.queue.evict(entry, it, f"its check is red on the tree rebased onto what landed "
                                                      f"before it: {f.message}", f.detail) from None
            before = await git.tip(p.ws.root, run.branch)
            if item.risk in TAGGED_RISKS:
                it.rollback_tag = f"plugkit/pre-{it.id}"
                await git.tag(p.ws.root, it.rollback_tag, before)
                self.refs.ours(f"refs/tags/{it.rollback_tag}", before)
            await git.advance(p.ws.root, run.branch, done.sha)
            self.refs.ours(f"refs/heads/{run.branch}", done.sha)
            it.landed = done.sha
            self.queue.move(entry, "landed", done.sha)
            log.info("work_item_landed", run=run.id, item=it.id, sha=done.sha)
            await self._complete(it, check, verified)

    async def _complete(self, it: ItemRun, check: str, verified: Task) -> None:
        p = self.p
        seen = await witness(p.tasks, verified)
        receipt = await p.gates.call(p.ws, item_ops.evidence_add, seen, None,
                                     f"plugkit work {it.id}: {check}"[:200],
                                     f"verify green on a fresh checkout of {self.checked_at.get(verified.id)}; "
                                     f"landed as {it.landed}", p.clock(),
                                     self.checked_at.get(verified.id))
        await p.gates.complete_with(p.ws, it.id, receipt.id)
        it.receipt = receipt.id
        self.run.check_allowed.pop(it.id, None)  # used: the next change to its check needs a new one
        it.enter("completed", p.clock(), "landed", f"landed as {(it.landed or '')[:12]} on {self.run.branch}; "
                                                   f"receipt {receipt.id}")

