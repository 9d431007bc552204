"""What the ledger remembers of a session, for the TaskManager: a task by id after a restart
or after it left memory, and a session's listing with the tasks of runners before this one.
A mixin over the manager's registry and ledger, so the manager stays about live tasks."""

from typing import Optional

from plugkit.refusals import NotFound
from runner.core.tasks.records import record_key, rehydrate
from runner.core.tasks.sessions import SessionRegistry, not_found, session_key
from runner.core.tasks.task import Task
from runner.system.ledger_worker import LedgerWorker


class LedgerRecall:
    _registry: SessionRegistry
    _ledger: Optional[LedgerWorker]

    def list_tasks(self, session_id: str, cwd: str) -> list[Task]:
        session = self._registry.find(session_key(session_id, cwd)) if session_id else None
        return list(session.tasks.values()) if session else []

    async def lookup(self, session_id: str, cwd: str, task_id: int) -> Task:
        """A task of this session from memory, else from the ledger (after a restart, or
        trimmed from memory); the same not-found either way for anyone else's id."""
        key = session_key(session_id, cwd)
        try:
            return self._registry.task(key, task_id)
        except NotFound:
            if self._ledger is None or not session_id:
                raise
        rec = await self._ledger.get(task_id)
        if rec is None or record_key(rec) != key:
            raise not_found(task_id)
        task = rehydrate(rec)
        # Where the session stopped reading, in the tail's own offsets (what it read is not new).
        task.read_cursor = min(task.buffer.end, max(0, await self._ledger.read_mark(task_id) - task.bytes_out_before))
        self._registry.finished(self._registry.open(key).tasks.setdefault(task.id, task))  # as the newest
        return self._registry.task(key, task_id)

    async def find(self, task_id: int) -> Optional[Task]:
        """A task by id in any session (the gates witness tasks of every session working in a
        workspace): memory first, then the ledger; None when neither knows it."""
        for task in self._registry.all_tasks():
            if task.id == task_id:
                return task
        if self._ledger is None:
            return None
        rec = await self._ledger.get(task_id)
        if rec is None or not rec.session_id:
            return None
        try:
            return await self.lookup(rec.session_id, rec.cwd, task_id)
        except NotFound:
            return None

    async def list_with_history(self, session_id: str, cwd: str) -> list[Task]:
        """list_tasks, plus what the ledger keeps of this session that memory does not (tasks
        of a runner before a restart, ended killed/runner_lost), in id order."""
        tasks = {t.id: t for t in self.list_tasks(session_id, cwd)}
        if self._ledger is not None and session_id:
            key = session_key(session_id, cwd)
            for rec in await self._ledger.session_tasks(key.session_id):
                if record_key(rec) == key:  # a task run anywhere in the session's workspace
                    tasks.setdefault(rec.task_id, rehydrate(rec))
        return [tasks[i] for i in sorted(tasks)]
