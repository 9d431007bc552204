"""One workspace's index kept fresh: built in the background (the engine's thread) on first use
(queries meanwhile see partial results and the progress), then brought up to date on each query from the
files the engine's watch saw change (a stat of every file where no watch can be had; either way a saved file
is searchable at the next query) and a look at git's HEAD."""

import os
import stat
import time
from dataclasses import dataclass

from runner.core.search import chunks, files, history, semantic
from runner.core.search.store import Job, SearchEngine
from runner.system import git_planted

BATCH = 25  # files per transaction: a query waits at most one batch for the lock
RELIST_S = 2.0  # how often a query re-lists the workspace (new and deleted files)
# With a watch, a file made or renamed in the tree and a .gitignore written are its events: the listing
# is redone for them at once, and on this clock only for what happens in .git (`git add -f` of an
# ignored file, info/exclude): a git ls-files each RELIST_S was 7 ms CPU of every query seconds apart.
RELIST_WATCHED_S = 30.0
REARM_S = 300.0  # how long a workspace whose watch could not be armed (a huge tree: a walk of 8,192 directories) stats every file before trying again
SYNC_LIMIT = 200  # more changed files than this are indexed in the background instead
# How long a query waits for the files changed since the last one to be read. The reads run in
# the index's own (daemon) thread, so one that never returns (a hung network or FUSE mount) holds
# neither the query nor the runner's stop: the query answers from the index as it is.
READ_WAIT_S = 5.0
HEAD_RECHECK_S = 60.0  # HEAD asked of git this often even when its files say nothing moved
COMPACT_STEPS = 10_000  # a bound on the merge steps after a build (a 2,000-file repository takes ~20)


@dataclass(frozen=True)
class Progress:
    done: int
    total: int


class WorkspaceIndex:
    def __init__(self, root: str, db_path: str, engine: SearchEngine, base_db: str | None = None,
                 base: "WorkspaceIndex | None" = None) -> None:
        """base_db: the index of the repository root is a linked worktree of: this one is then that
        index plus an overlay of what differs (runner/system/search/overlay.py). base: that index
        while it is still being built; this one waits for it instead of indexing from scratch."""
        self.root = root
        self._engine = engine
        self._db_path, self._base_db, self._base = db_path, base_db, base
        self.store = engine.open_store(db_path, base_db)
        self._retired: list = []  # a store a query may still hold, closed with this index
        self._base_shas: dict[str, str] = {}  # path -> digest the base indexed, read once per build or refresh
        self.embedder = None  # a model of runner/system/embedder.py once use() is called (the extra is on)
        self.vectors: semantic.Vectors | None = None
        self._embedder_thread: Job | None = None
        self._thread: Job | None = None
        self._compactor: Job | None = None  # the segments merged after a build, beside the refreshes
        self._stop = engine.flag()
        self._progress: Progress | None = None
        self._listed: list[str] = []
        self._full: list[tuple[str, str]] = []  # (path in the workspace, absolute path) of each listed file
        self._listed_at = 0.0
        self._dirs: dict[str, float] = {}
        self._dir_list: list[str] = []
        self._known: dict[str, tuple[float, int]] | None = None  # the store's stamps, kept in step
        self._listed_set: frozenset[str] = frozenset()
        self._watch = None  # the engine's watch of root (store.Watch), armed before the stat it spares
        self._watch_tried = -REARM_S
        self._unlisted: set[str] = set()  # paths the watch saw that the last listing had not
        self._gitdir: str | None = None  # "" when the workspace is no repository
        self._commondir = ""  # where its refs are: the repository's for a linked worktree
        self._head_stamp: tuple | None = None
        self._refresh_lock = engine.lock()

    # --- what a query sees -------------------------------------------------------------
    def progress(self) -> Progress | None:
        """None when the index is complete; else how far the background build is."""
        return self._progress

    def prepare(self) -> None:
        """Before a query: start the first build, or bring a built index up to date."""
        if not self._refresh_lock.acquire(timeout=READ_WAIT_S):
            return  # another query's refresh is stuck: answer from the index as it is
        try:  # two queries at once start one build, not two
            if self._base is not None and not self._base_ready():
                return
            if self._thread is not None and self._thread.alive():
                return
            if self.store.get_meta("built") is None:
                self._start()
                return
            every = RELIST_WATCHED_S if self._watch is not None else RELIST_S
            changed, gone = self._diff(force_list=time.monotonic() - self._listed_at > every)
            if len(changed) > SYNC_LIMIT:
                self._start()
                return
            if changed or gone:
                self._thread = self._engine.start(f"search-refresh {self.root}", self._refresh, changed, gone)
            refresh = self._thread
            self._history()
        finally:
            self._refresh_lock.release()
        if changed or gone:
            refresh.join(READ_WAIT_S)  # a saved file is searchable at the next query

    def _refresh(self, changed: list[tuple[str, float, int]], gone: list[str]) -> None:
        try:
            self._apply(changed, gone)
            if changed:
                self._embed_later()
        except Exception:  # noqa: BLE001 - a broken refresh must not take the runner down; the next query retries
            self._known = None

    def _base_ready(self) -> bool:
        """A worktree waiting for its repository's index: once that is built, this index becomes
        its overlay (and builds only what differs); until then it shows the base's progress."""
        base = self._base
        try:
            if base.store.get_meta("built") is None:
                base.prepare()  # its build under way, or started again after a failure
                self._progress = base.progress() or Progress(0, 0)
                return False
        except Exception:  # noqa: BLE001 - the base closed meanwhile (evicted): index this one itself
            pass
        self._base = None
        self._retired.append(self.store)  # never written: a query that holds it reads an empty index
        self.store = self._engine.open_store(self._db_path, self._base_db)
        self._known, self._progress = None, None
        return True

    def wait(self, seconds: float) -> None:
        base = self._base
        if base is not None:  # the base's build first, then this one's (small) own
            began = time.monotonic()
            base.wait(seconds)
            self.prepare()
            seconds = max(0.0, seconds - (time.monotonic() - began))
        thread = self._thread
        if thread is not None and thread.alive():
            thread.join(seconds)

    def use(self, embedder) -> None:
        """The semantic layer from now on (None: BM25 alone); chunks lacking a vector are embedded."""
        if embedder is not None:
            self.embedder = embedder  # before vectors: a query reads vectors, then uses the embedder
            self.vectors = semantic.Vectors()
            if self.store.get_meta("built") is not None:
                self._embed_later()

    @property
    def embedding(self) -> bool:
        """The semantic layer's filling thread is writing vectors now."""
        thread = self._embedder_thread
        return thread is not None and thread.alive()

    def wait_vectors(self, seconds: float) -> None:
        """Until the semantic layer has embedded every chunk (the eval; a query never waits)."""
        self.wait(seconds)
        thread = self._embedder_thread
        if thread is not None and thread.alive():
            thread.join(seconds)

    def close(self) -> None:
        self._stop.set()
        for thread in (self._thread, self._embedder_thread, self._compactor):
            if thread is not None:
                thread.join(10)
        held = self._refresh_lock.acquire(timeout=READ_WAIT_S)  # a query's prepare may be reading the watch
        try:
            if self._watch is not None:
                self._watch.close()
                self._watch = None
        finally:
            if held:
                self._refresh_lock.release()
        for store in (*self._retired, self.store):
            store.close()

    def status(self) -> dict:
        p = self._progress
        return {"root": self.root, "files": len(self._listed) or len(self.store.stamps()),
                "indexing": None if p is None else {"done": p.done, "total": p.total},
                "built": self.store.get_meta("built"), "head": self.store.get_meta("head"),
                "vectors": None if self.embedder is None else dict(zip(("done", "total"), self.store.embedded()))}

    # --- building ------------------------------------------------------------------------
    def _start(self) -> None:
        self._progress = Progress(0, 0)
        self._thread = self._engine.start(f"search-index {self.root}", self._build)

    def _build(self) -> None:
        try:
            with self._refresh_lock:
                self._known = None  # every file stat'ed: a refresh handed over to this build is in it
                changed, gone = self._diff(force_list=True)
            total = len(changed)
            self._progress = Progress(0, total)
            self._base_shas = self.store.base_shas()
            self._drop(gone)
            for i in range(0, total, BATCH):
                if self._stop.is_set():
                    return
                self._index(changed[i:i + BATCH])
                self._progress = Progress(min(total, i + BATCH), total)
            self._history()
            self.store.set_meta("built", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            # Its own job: a query's refresh of a saved file need not wait for the merge to end.
            self._compactor = self._engine.start(f"search-compact {self.root}", self._compact)
            self._embed_later()
        except Exception:  # noqa: BLE001 - a broken build must not take the runner down; the next query retries
            self.store.set_meta("build_error", "1")
        finally:
            self._progress = None

    def _compact(self) -> None:
        """The build's many small segments merged, one short step under the store's lock at a time."""
        try:
            for _ in range(COMPACT_STEPS):
                if self._stop.is_set() or not self.store.compact():
                    return
        except Exception:  # noqa: BLE001 - an index closed meanwhile, a full disk: it answers as it is, only slower
            return

    def _diff(self, force_list: bool) -> tuple[list[tuple[str, float, int]], list[str]]:
        """(changed or new files with their mtime and size, files gone) against the store."""
        touched = self._touched()
        relist = force_list or not self._listed
        if touched is None:  # no watch, or one just armed: the listing as before, every file stat'ed
            relist = relist or self._watch is not None or self._dirs_changed()
        elif not relist:  # a file made where none was listed, or a new ignore rule: git lists again
            # One that is gone already (an editor's temporary file, renamed over the one it saves) needs none.
            unlisted = {p for p in touched if p not in self._listed_set and p not in self._unlisted
                        and os.path.lexists(os.path.join(self.root, p))}
            relist = bool(unlisted) or any(p.rsplit("/", 1)[-1] == ".gitignore" for p in touched)
        if relist:
            before, self._unlisted = self._listed_set, set()
            self._listed = files.list_files(self.root)
            self._listed_set = frozenset(self._listed)
            self._listed_at = time.monotonic()
            if self._watch is None:  # the directories' mtimes stand in for a watch
                self._dir_list = sorted({os.path.dirname(p) for p in self._listed} | {""})
                self._dirs = self._dir_stamps()
            # Joined once per listing, not per query: the loop below is most of a query without a watch.
            self._full = [(rel, os.path.join(self.root, rel)) for rel in self._listed]
            if touched is not None:
                touched |= self._listed_set - before
                # An ignored log appended to at every query is listed again once, not at each query.
                self._unlisted = {p for p in touched if p not in self._listed_set}
        if self._known is None:
            self._known = self.store.stamps()
        known = self._known
        for rel in self.store.stale_shared():  # a worktree's file the base has re-indexed since: read again
            known[rel] = (-1.0, -1)
            if touched is not None:
                touched.add(rel)
        if touched is None:
            candidates = self._full
        else:  # the watch's paths only: every other listed file is as the store has it
            listed = self._listed_set
            candidates = [(rel, os.path.join(self.root, rel)) for rel in touched if rel in listed]
        changed, seen = [], set()
        lstat, regular, stamp_of = os.lstat, stat.S_ISREG, known.get
        for rel, full in candidates:
            try:  # lstat: a link or a FIFO is not indexed at all (files.read_text would refuse it)
                st = lstat(full)
            except OSError:
                continue
            if not regular(st.st_mode):
                continue
            seen.add(rel)
            if stamp_of(rel) != (st.st_mtime, st.st_size):
                changed.append((rel, st.st_mtime, st.st_size))
        if touched is None:
            return changed, [p for p in known if p not in seen]
        listed = self._listed_set
        return changed, [p for p in known if p not in listed or (p in touched and p not in seen)]

    def _touched(self) -> set[str] | None:
        """The files the watch saw change since the last query; None when every file is to be
        stat'ed: no watch can be had, one was armed just now, or it lost track (then it is re-armed
        here, before that stat, so nothing written from now on goes unseen)."""
        if self._watch is not None:
            got = self._watch.changes()
            if got is not None:
                return got if self._known is not None else None
            self._watch.close()
            self._watch = None
        elif time.monotonic() - self._watch_tried < REARM_S:
            return None  # none could be had a moment ago (no inotify left, a huge tree): stat as before
        self._watch_tried = time.monotonic()
        self._watch = self._engine.watch(self.root, files.SKIP_DIRS)
        self._listed = []  # listed again after the watch is armed (or without one, by its own rules)
        return None

    def _dir_stamps(self) -> dict[str, float]:
        """Each listed directory's mtime: a file created or removed in it changes it."""
        out = {}
        for d in self._dir_list:
            try:
                out[d] = os.stat(os.path.join(self.root, d)).st_mtime
            except OSError:
                out[d] = -1.0
        return out

    def _dirs_changed(self) -> bool:
        return self._dir_stamps() != self._dirs

    def _apply(self, changed: list[tuple[str, float, int]], gone: list[str]) -> None:
        self._base_shas = self.store.base_shas() if changed else {}
        self._drop(gone)
        for i in range(0, len(changed), BATCH):
            self._index(changed[i:i + BATCH])

    def _drop(self, gone: list[str]) -> None:
        with self.store.batch() as s:
            for rel in gone:
                s.drop_file(rel)
                if self._known is not None:
                    self._known.pop(rel, None)

    def _index(self, batch: list[tuple[str, float, int]]) -> None:
        cut = []
        for rel, mtime, size in batch:  # parse outside the lock: queries keep running meanwhile
            text, sha = files.read_indexed(self.root, rel, size)
            if sha is not None and self._base_shas.get(rel) == sha:
                cut.append((rel, mtime, size, None, sha))  # a worktree's file its repository's index holds
                continue
            parts = chunks.cut(rel, text) if text is not None else ([], [])
            cut.append((rel, mtime, size, parts, sha))
        with self.store.batch() as s:
            for rel, mtime, size, parts, sha in cut:
                if parts is None:
                    s.share(rel, mtime, size, sha)
                else:  # a skipped file (binary, huge) is recorded too, so it is not re-read each query
                    s.put_file(rel, mtime, size, files.kind(rel)[1], chunks.language(rel), *parts, sha)
                if self._known is not None:
                    self._known[rel] = (mtime, size)

    def _embed_later(self) -> None:
        """Chunk vectors in a thread of their own, after the BM25 index: the model embeds a few
        chunks a second on a CPU, and BM25 answers must not wait for it."""
        if self.embedder is None or (self._embedder_thread is not None and self._embedder_thread.alive()):
            return
        self._embedder_thread = self._engine.start(f"search-vectors {self.root}", semantic.fill,
                                                   self.store, self.root, self.embedder, self._stop)

    def _git_stamp(self) -> tuple | None:
        """Cheap proof that HEAD has not moved, read from git's files (history.head_files); asked of git
        at least every HEAD_RECHECK_S all the same (issue 46: asking it every RELIST_S spawned a git
        for each query an agent asks seconds apart, 10-30 ms of it)."""
        if self._gitdir is None:
            self._gitdir = history.git_dir(self.root) or ""
            self._commondir = git_planted.common_dir(self._gitdir) if self._gitdir else ""
        if not self._gitdir:
            return None
        return (int(time.monotonic() // HEAD_RECHECK_S), *history.head_files(self._gitdir, self._commondir))

    def _history(self) -> None:
        stamp = self._git_stamp()
        if stamp is None or stamp == self._head_stamp:
            return  # no repository, or HEAD has not moved
        self._head_stamp = stamp
        now = history.head(self.root)
        last = self.store.get_meta("head")
        if now is None or now == last:
            return
        # Reconciled, not appended from the last HEAD on: an amend, a rebase or a reset leaves
        # commits HEAD no longer reaches, and their subjects would answer "why" with a ghost.
        reach = history.reachable(self.root, now)
        if reach is None:
            return
        add, drop = history.reconcile(self.store.commit_hashes(), reach)
        found = history.commits(self.root, add)
        with self.store.batch() as s:
            s.drop_commits(drop)
            s.add_commits(found)
            s.set_meta("head", now)

