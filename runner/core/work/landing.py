"""The runner's own evidence for an item and its landing: the check run on a fresh checkout of
the branch's commit, the landing on the run's branch under the one landing lock, the receipt.
A base of Attempts (runner/core/work/attempt.py), which holds the state these read."""

import asyncio
import os
from typing import Any, Callable, Optional

from plugkit.lifecycle import item_ops, prd
from plugkit.vocab import WORK_REJECTED as REJECTED
from plugkit.work import scopes
from runner.core.gates.witness import witness
from runner.core.tasks.task import Task
from runner.core.work import git
from runner.core.work.model import Failed, ItemRun, QueueEntry, Run
from runner.core.work.queue import LandingQueue, hunks
from runner.core.work.train import Guess, Train, settled
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
    train: Train
    checked_at: dict[int, str]
    check_dir: Callable[[ItemRun], str]

    async def _verify(self, it: ItemRun, check: str, cfg, sha: str, fresh: bool = False) -> Task:
        """The check, run by the runner on a fresh checkout of `sha`: the evidence, not the worker's
        word, on exactly the committed tree (the receipt names `sha`). `fresh`: the check dir is
        one already (the runner's rebase there just made it; nothing has run in it since)."""
        p = self.p
        assert it.session_id is not None
        where = self.check_dir(it)
        it.phase("check", p.clock())
        if not fresh:
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
        it.phase("checked", p.clock())
        if not green:
            tail = "".join(text for _stream, text in p.tasks.read(task, max(0, task.buffer.end - TAIL_BYTES),
                                                                     TAIL_BYTES).chunks)
            raise Failed(REJECTED, "verify_failed", f"`{check}` {task.message} on {sha[:12]} (its commits only) "
                                                      f"(task_{task.id}); `plugkit work logs {it.id} --verify`",
                         "\n".join(tail.splitlines()[-TAIL_LINES:]))
        return task

    async def _land(self, it: ItemRun, item: prd.Item, check: str, cfg, verified: Task) -> None:
        """Queues the green branch (runner/core/work/queue.py) and guesses at once what it lands as
        (train.py: integrated onto the tip the entries ahead leave, checked there); in its turn, under
        the landing lock, takes the guess when the tip is the one it guessed, else integrates it with
        the latest tip and checks the result again if the tree changed; lands, then completes the
        item: the completion's receipt must name the HEAD it checked, and the next item to land would
        move it. A conflict or a red check on the integrated tree evicts it."""
        p, run = self.p, self.run
        assert it.branch is not None
        sha = self.checked_at[verified.id]
        entry = self.queue.join(it, sha)
        it.phase("queued", p.clock())
        ahead = self.train.ahead(run.queue, entry)
        guessing = self.train.start(entry, lambda leaves: self._guess(it, item, check, cfg, sha, ahead, leaves))
        try:
            async with self.queue.turn(entry):
                it.phase("turn", p.clock())
                self.queue.move(entry, "rebasing")
                guess = await settled(guessing)  # not under the landing lock: workers starting and ending take it
                async with self.land_lock:
                    before = await git.tip(p.ws.root, run.branch)
                    if guess is None or guess.base != before:  # an entry ahead left, or the branch moved
                        guess = await self._guess(it, item, check, cfg, sha, base=before, entry=entry)
                    await self._landed(it, item, check, entry, guess, verified, before)
        finally:
            await self.train.end(entry, guessing)

    async def _guess(self, it: ItemRun, item: prd.Item, check: str, cfg, sha: str,
                     ahead: Optional["asyncio.Future[str]"] = None, leaves: Optional["asyncio.Future[str]"] = None,
                     base: Optional[str] = None, entry: Optional[QueueEntry] = None) -> Guess:
        """`sha` integrated onto `base` (default: the tip the entry ahead expects to leave, or the tip
        now) and, when that changed the tree, checked there; how that failed is kept, for its turn to
        raise. `leaves` is told the tip this entry leaves if its check is green, once integrated."""
        p, run = self.p, self.run
        assert it.branch is not None
        try:
            if base is None:
                base = await settled(ahead) or await git.tip(p.ws.root, run.branch)
            guess = Guess(base)
            try:
                guess.done = await git.integrate(p.ws.root, self.check_dir(it), it.branch, run.branch, run.merge,
                                                 f"plugkit work: {it.id} {item.subject[:60]}", sha, base=base,
                                                 move=False)
            except git.GitError as exc:
                guess.failed = exc
            if leaves is not None:
                leaves.set_result(guess.after)
            if guess.done is not None and guess.done.changed:  # rebased onto what lands before it: check that tree
                it.phase("recheck", p.clock())
                if entry is not None:
                    self.queue.move(entry, "checking")
                try:
                    guess.verified = await self._verify(it, check, cfg, guess.done.sha, fresh=guess.done.checked_out)
                except Failed as exc:
                    guess.failed = exc
            return guess
        finally:
            if leaves is not None and not leaves.done():
                leaves.cancel()  # no guess: the entry behind integrates onto the tip as it is

    async def _landed(self, it: ItemRun, item: prd.Item, check: str, entry: QueueEntry, guess: Guess,
                      verified: Task, before: str) -> None:
        """In its turn, `guess` made on the tip `before`: evicted as it failed there, or landed."""
        p, run = self.p, self.run
        assert it.branch is not None
        done, failed = guess.done, guess.failed
        if isinstance(failed, git.MergeConflict) and failed.files:
            raise self.queue.evict(entry, it, f"conflicts with what landed before it in "
                                              f"{', '.join(failed.files[:5])[:200]}", hunks(failed.texts))
        if isinstance(failed, git.GitError) or done is None:
            raise failed or git.GitError("integrating the branch gave no result")
        if done.changed and run.merge == "ff":  # the item's branch is its rebase: the runner's move
            await git.rebased_to(p.ws.root, it.branch, run.branch, done.sha)
        self.refs.ours(f"refs/heads/{it.branch}", await git.tip(p.ws.root, it.branch))
        if isinstance(failed, Failed):
            if failed.reason != "verify_failed":
                raise failed
            raise self.queue.evict(entry, it, f"its check is red on the tree rebased onto what landed "
                                              f"before it: {failed.message}", failed.detail)
        verified = guess.verified or verified
        if item.risk in TAGGED_RISKS:
            it.rollback_tag = f"plugkit/pre-{it.id}"
            await git.tag(p.ws.root, it.rollback_tag, before)
            self.refs.ours(f"refs/tags/{it.rollback_tag}", before)
        await git.advance(p.ws.root, run.branch, done.sha)
        self.refs.ours(f"refs/heads/{run.branch}", done.sha)
        it.landed = done.sha
        it.phase("landed", p.clock())
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

