"""A workspace's kept runs as `plugkit work runs`, status/logs/trace/rollback RUN and the page
read them: a run by its id or prefix, the kept list newest first, and each run's journal (the
live one's, or a past run's read back from its file; a few past ones cached)."""

from typing import Callable, Iterable, Optional

from plugkit.refusals import NotFound
from runner.core.work.journal import RunJournal
from runner.core.work.model import Run
from runner.core.work.store import RunStore

PAST_JOURNALS = 8  # journals of runs no longer live, kept in memory after a read


class PastRuns:
    def __init__(self, store: RunStore, clock: Callable[[], float]) -> None:
        self.store, self.clock = store, clock
        self.journals: dict[str, RunJournal] = {}  # run id -> its journal

    def journal(self, run: Run, live: Iterable[str]) -> RunJournal:
        journal = self.journals.get(run.id)
        if journal is None:
            live = set(live)
            for old in [k for k in self.journals if k not in live][:-PAST_JOURNALS]:
                del self.journals[old]
            journal = self.journals[run.id] = RunJournal(run, self.store.journal_path(run), self.clock)
            for it in run.items.values():
                it.moved = journal.observe_item
        return journal

    def find(self, root: str, run_id: Optional[str], latest: Optional[Run]) -> Run:
        """The workspace's run `run_id` (an id or a unique prefix of one), else its latest."""
        if run_id is None or (latest is not None and latest.id.startswith(run_id)):
            if latest is None:
                raise NotFound("no plugkit work run in this workspace yet; `plugkit work` starts one")
            return latest
        run = self.store.find(root, run_id)
        if run is None:
            raise NotFound(f"no run {run_id} kept for this workspace (`plugkit work runs` lists them)")
        return run

    def kept(self, root: str, latest: Optional[Run], limit: int) -> list[Run]:
        """The workspace's kept runs, newest first (the live one as it is now)."""
        out = [latest] if latest is not None else []
        for run in self.store.runs(root):
            if len(out) >= limit:
                break
            if latest is None or run.id != latest.id:
                out.append(run)
        return out

    def holding(self, root: str, item_id: str, other_than: str) -> Optional[Run]:
        """The newest kept run but `other_than` with item `item_id` in it (where to point a miss)."""
        return next((r for r in self.store.runs(root) if item_id in r.items and r.id != other_than), None)
