"""The durable task ledger: the task id sequence and every task's record, in sqlite under $PLUGKIT_HOME."""

import contextlib
import logging
import os
import sqlite3
import time
from dataclasses import dataclass, fields
from typing import Any, Iterable, Iterator, Optional

from plugkit.vocab import END_REASONS, KILLED, LIVE_STATES

log = logging.getLogger("plugkit.store")

SCHEMA_VERSION = 1
LIVE = LIVE_STATES
LOST_STATE, LOST_REASON = KILLED, "runner_lost"
LOST_MESSAGE = END_REASONS[LOST_REASON]
SIBLINGS = ("", "-wal", "-shm")
FLOOR_SUFFIX = ".last-id"  # ledger.sqlite3.last-id: the id high-water mark, outliving the ledger itself
# Only these mean "the bytes are bad". Busy, locked, permission or I/O errors say nothing about the
# file, and moving a healthy ledger aside for them would throw its history away.
CORRUPTION_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
# After a checkpoint the WAL is cut back to this, instead of staying as large as its biggest burst.
WAL_KEEP_BYTES = 4 << 20


@dataclass(frozen=True)
class TaskRecord:
    task_id: int
    session_id: str
    cwd: str
    lang: str
    code_sha256: str
    state: str
    started_at: float
    ended_at: Optional[float] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    reason: Optional[str] = None
    message: Optional[str] = None
    bytes_out: int = 0
    dropped: int = 0
    output_tail: str = ""  # bounded tail of the output (all streams as one text)


# SQL is assembled from these constant column names only; values always travel as parameters.
_COLS = [f.name for f in fields(TaskRecord)]
_SELECT = f"SELECT {', '.join(_COLS)} FROM tasks WHERE task_id = ?"
# A listing needs no output: the tail (up to 64 KiB a row) is left out.
_SESSION = (f"SELECT {', '.join(c if c != 'output_tail' else repr('') for c in _COLS)} FROM tasks"
            " WHERE session_id = ? ORDER BY task_id")
_INSERT = f"INSERT INTO tasks ({', '.join(_COLS)}) VALUES ({', '.join(':' + c for c in _COLS)})"
_UPSERT = _INSERT + " ON CONFLICT (task_id) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in _COLS[1:])
_INSERT_NEW = _INSERT + " ON CONFLICT (task_id) DO NOTHING"
_LIVE_SET = f"({', '.join('?' * len(LIVE))})"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    """CREATE TABLE IF NOT EXISTS tasks (
        task_id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, cwd TEXT NOT NULL, lang TEXT NOT NULL,
        code_sha256 TEXT NOT NULL, state TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL,
        exit_code INTEGER, signal INTEGER, reason TEXT, message TEXT, bytes_out INTEGER NOT NULL,
        dropped INTEGER NOT NULL, output_tail TEXT NOT NULL)""",
    # How far its session has read each task's output (absolute bytes): a restarted runner's
    # "what is new" starts there, never repeating what was shown. Its own table: a ledger of an
    # older runner gains it without a migration, and an older runner reading this one ignores it.
    "CREATE TABLE IF NOT EXISTS reads (task_id INTEGER PRIMARY KEY, read_out INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS tasks_by_end ON tasks (ended_at)",
    "CREATE INDEX IF NOT EXISTS tasks_by_session ON tasks (session_id, cwd)",
)


class Ledger:
    """Synchronous and single-connection: call every method from one thread (LedgerWorker's)."""

    def __init__(self, path: str, *, retention_s: float = 24 * 3600, max_rows: int = 20_000,
                 tail_bytes: int = 64 << 10) -> None:
        self.path = path
        self.retention_s, self.max_rows, self.tail_bytes = retention_s, max_rows, tail_bytes
        self.recovered_from: Optional[str] = None
        # Read before _connect creates the file: sqlite takes an empty or missing file for a new ledger.
        size = _size(path)
        self._floor = _Floor(path + FLOOR_SUFFIX)
        try:
            self._conn = _connect(path)
        except BaseException:
            self._floor.close()
            raise
        try:
            # Empty or missing where the floor says ids were handed out: not a new ledger, a lost one
            # (decided before _problem writes a schema into it, so the evidence moves aside as found).
            lost = size in (None, 0) and self._floor.value > 0
            why = _lost_history(size, self._floor.value) if lost else _problem(self._conn)
            if why is not None:
                # A deleted ledger's -wal left by a crash would be replayed into the fresh file: it goes too.
                self._recover(why, move_aside=size is not None or any(
                    os.path.lexists(path + suffix) for suffix in SIBLINGS[1:]))
            # A healthy ledger below its floor is one killed between the floor's write and its own
            # commit: those ids were never handed out, skipping them is all it takes.
            self._conn.execute("UPDATE meta SET value = max(value, ?) WHERE key = 'last_id'", (self._floor.value,))
            self._floor.write(_last_id(self._conn))  # e.g. a ledger from before the floor existed
        except BaseException:
            self._conn.close()
            self._floor.close()
            raise
        for suffix in SIBLINGS[1:]:  # siblings left by an older runner may predate the 0600 file
            with contextlib.suppress(FileNotFoundError):
                os.chmod(path + suffix, 0o600)

    def _recover(self, why: str, move_aside: bool = True) -> None:
        """The runner must start anyway: keep the bad file for a post-mortem and begin afresh."""
        last_id = _last_id_floor(self._conn, self._floor.known)
        # Renamed while still open: the last connection's close deletes the -wal by name (after
        # checkpointing it into the file), so under the new name the evidence stays whole.
        if move_aside:
            self.recovered_from = _move_aside(self.path)
        self._conn.close()
        self._conn = _connect(self.path)
        again = _problem(self._conn)
        if again is not None:
            raise RuntimeError(f"a fresh ledger at {self.path} is unusable too: {again}")
        self._conn.execute("UPDATE meta SET value = max(value, ?) WHERE key = 'last_id'", (last_id,))
        kept = f"moved it to {self.recovered_from}" if self.recovered_from else "nothing left to move aside"
        log.error("ledger %s was unusable (%s); %s and started a fresh one; task ids continue after %d",
                  self.path, why, kept, last_id)

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            if self._conn.in_transaction:  # sqlite may already have rolled back (e.g. disk full)
                self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def reserve_ids(self, count: int) -> int:
        if count < 1:
            raise ValueError(f"count must be at least 1, not {count}")
        # An id shown to an agent must survive power loss, not only a crash: NORMAL syncs the WAL at
        # checkpoints only, so this one commit is FULL. Reserving blocks keeps the fsync rare.
        self._conn.execute("PRAGMA synchronous = FULL")
        try:
            with self._tx() as db:
                # The floor goes first: if the commit then fails, ids are skipped, never repeated.
                self._floor.write(_last_id(db) + count)
                (last,) = db.execute("UPDATE meta SET value = value + ? WHERE key = 'last_id' RETURNING value",
                                     (count,)).fetchall()[0]
        finally:
            self._conn.execute("PRAGMA synchronous = NORMAL")
        return last - count + 1

    def release_ids(self, first_unused: int, block_end: int) -> None:
        """A clean stop gives back the unused end of its last block, so the next runner's ids
        continue from the last one handed out. Only if nothing was reserved after that block;
        the ledger's mark goes down before the floor, so the floor stays >= it throughout."""
        with self._tx() as db:
            if _last_id(db) != block_end or first_unused > block_end:
                return
            db.execute("UPDATE meta SET value = ? WHERE key = 'last_id'", (first_unused - 1,))
        self._floor.write(first_unused - 1)

    def session_tasks(self, session_id: str) -> list[TaskRecord]:
        """One session id's records, oldest first, without their output. Which of them belong
        to one session (id, workspace root) is the core's rule (records.record_key), not SQL's:
        a record keeps the cwd its task ran in, anywhere in the workspace."""
        return [TaskRecord(*row) for row in self._conn.execute(_SESSION, (session_id,))]

    def record_start(self, rec: TaskRecord) -> None:
        self._conn.execute(_INSERT, self._params(rec))

    def record_end(self, rec: TaskRecord) -> None:
        self._conn.execute(_UPSERT, self._params(rec))

    def apply(self, batch: Iterable[tuple[str, TaskRecord]]) -> None:
        """Journaled records (runner/system/ledger_journal.py) in one transaction: an end is the
        whole record; a start never overwrites one already there (a replay runs it twice). A
        record the table refuses is logged and skipped, the rest are kept."""
        with self._tx() as db:
            for kind, rec in batch:
                try:
                    db.execute(_UPSERT if kind == "end" else _INSERT_NEW, self._params(rec))
                except sqlite3.IntegrityError:
                    log.exception("ledger record of task_%s refused", rec.task_id)

    def _params(self, rec: TaskRecord) -> dict[str, Any]:
        # Not dataclasses.asdict: its deep copy was a third of the cost of a whole write.
        return {**{c: getattr(rec, c) for c in _COLS}, "output_tail": _tail(rec.output_tail, self.tail_bytes)}

    def get(self, task_id: int) -> Optional[TaskRecord]:
        row = self._conn.execute(_SELECT, (task_id,)).fetchone()
        return TaskRecord(*row) if row else None

    def mark_lost(self, now: float, keep: frozenset[int] = frozenset()) -> list[int]:
        """Tasks left live by a runner that is gone, but keep (handed over to this one, running)."""
        with self._tx() as db:
            live = [task_id for (task_id,) in db.execute(f"SELECT task_id FROM tasks WHERE state IN {_LIVE_SET}",
                                                         LIVE).fetchall() if task_id not in keep]
            for task_id in live:
                db.execute("UPDATE tasks SET state = ?, reason = ?, message = 'task_' || task_id || ' ' || ?,"
                           " ended_at = ? WHERE task_id = ?", (LOST_STATE, LOST_REASON, LOST_MESSAGE, now, task_id))
        return sorted(live)

    def evict(self, now: float) -> int:
        with self._tx() as db:
            deleted = db.execute(f"DELETE FROM tasks WHERE state NOT IN {_LIVE_SET} AND ended_at < ?",
                                 (*LIVE, now - self.retention_s)).rowcount
            (rows,) = db.execute("SELECT count(*) FROM tasks").fetchone()
            if rows > self.max_rows:
                # Live tasks are never evicted, so the table may stay above max_rows while they run.
                deleted += db.execute(
                    f"DELETE FROM tasks WHERE task_id IN (SELECT task_id FROM tasks WHERE state NOT IN {_LIVE_SET}"
                    " ORDER BY ended_at, task_id LIMIT ?)", (*LIVE, rows - self.max_rows)).rowcount
            if deleted:
                db.execute("DELETE FROM reads WHERE task_id NOT IN (SELECT task_id FROM tasks)")
        return deleted

    def record_read(self, task_id: int, read_out: int) -> None:
        """The session has read task_id's output up to read_out bytes (never moves back)."""
        self._conn.execute("INSERT INTO reads (task_id, read_out) VALUES (?, ?) ON CONFLICT (task_id)"
                           " DO UPDATE SET read_out = max(read_out, excluded.read_out)", (task_id, read_out))

    def read_mark(self, task_id: int) -> int:
        row = self._conn.execute("SELECT read_out FROM reads WHERE task_id = ?", (task_id,)).fetchone()
        return int(row[0]) if row else 0

    def record_output(self, task_id: int, tail: str, bytes_out: int) -> None:
        """What a task lost with the previous runner had printed (read back from its spool)."""
        with self._tx() as db:
            db.execute("UPDATE tasks SET output_tail = ?, bytes_out = max(bytes_out, ?) WHERE task_id = ?",
                       (_tail(tail, self.tail_bytes), bytes_out, task_id))

    def forget(self, task_ids: list[int]) -> int:
        """Delete records an agent closed on purpose (exec:close, session.end)."""
        with self._tx() as db:
            db.executemany("DELETE FROM reads WHERE task_id = ?", [(i,) for i in task_ids])
            return db.executemany("DELETE FROM tasks WHERE task_id = ?", [(i,) for i in task_ids]).rowcount

    def close(self) -> None:
        self._conn.close()
        self._floor.close()


class _Floor:
    """The id high-water mark kept beside the ledger, so a ledger emptied, deleted or garbled
    by hand still cannot restart the id sequence. Always >= the ledger's own mark (written
    before it); one fixed-width record rewritten in place, well inside one disk sector."""

    WIDTH = 20

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        raw = os.pread(self._fd, 64, 0)
        try:
            self.known: Optional[int] = int(raw.decode("ascii")) if raw.strip() else None
        except ValueError:  # a torn or garbled record: it says nothing, the ledger's own mark stands
            log.warning("ledger id floor %s is unreadable (%r); ignoring it", path, raw[:40])
            self.known = None

    @property
    def value(self) -> int:
        return self.known or 0

    def write(self, value: int) -> None:
        if value == self.known:
            return
        os.pwrite(self._fd, str(value).rjust(self.WIDTH).encode("ascii") + b"\n", 0)
        os.fsync(self._fd)
        self.known = value

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _size(path: str) -> Optional[int]:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return None


def _last_id(conn: sqlite3.Connection) -> int:
    (value,) = conn.execute("SELECT value FROM meta WHERE key = 'last_id'").fetchone()
    return int(value)


def _lost_history(size: Optional[int], floor: int) -> str:
    state = "deleted" if size is None else "truncated to 0 bytes"
    return f"{state}, while its id floor says ids reached {floor}"


def _connect(path: str) -> sqlite3.Connection:
    # sqlite creates a database 0644 (less umask) and gives -wal/-shm the database's own mode, so
    # creating it 0600 first makes all three private without the process-wide umask, which the
    # event loop's thread relies on while it spawns tasks.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return sqlite3.connect(path, isolation_level=None, timeout=5.0)


def _problem(conn: sqlite3.Connection) -> Optional[str]:
    """Why this file cannot be the ledger, or None once it is ready; errors that do not mean
    corruption propagate."""
    try:
        (verdict,) = conn.execute("PRAGMA quick_check").fetchone()
        if verdict != "ok":
            return f"quick_check: {verdict}"
        (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        if mode != "wal":  # e.g. a filesystem without shared memory; slower, still correct
            log.warning("ledger journal_mode is %s, not wal", mode)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(f"PRAGMA journal_size_limit = {WAL_KEEP_BYTES}")  # pragmas take no parameters
        conn.execute("BEGIN IMMEDIATE")
        for statement in _SCHEMA:
            conn.execute(statement)
        conn.executemany("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
                         [("schema_version", SCHEMA_VERSION), ("last_id", 0)])
        conn.execute("COMMIT")
        (version,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF in CORRUPTION_CODES:
            return str(exc)
        raise
    if version != SCHEMA_VERSION:  # a newer runner wrote it; guessing at its layout could lose ids
        return f"schema version {version}, this runner knows {SCHEMA_VERSION}"
    return None


def _last_id_floor(conn: sqlite3.Connection, floor: Optional[int] = None) -> int:
    """The id a fresh ledger must continue after, so that no id handed out before repeats.

    The meta high-water mark and the floor file beside the ledger are exact (both written before
    ids are handed out): when either is readable, ids stay short. Task rows understate it (reserved
    blocks, writes in flight at a crash hold ids with no row), so without them only the clock bounds
    what was handed out: int(time.time()) is above every earlier id unless the runner averaged more
    than one id a second since the epoch (or since the last clock-floored recovery), far beyond what
    agents start. The price: ids like task_1745000000.
    """
    hwm, seen = None, 0
    with contextlib.suppress(sqlite3.DatabaseError):
        conn.execute("PRAGMA writable_schema = ON")  # lets a truncated file show the pages it still has
        row = conn.execute("SELECT value FROM meta WHERE key = 'last_id'").fetchone()
        hwm = int(row[0]) if row else None
    with contextlib.suppress(sqlite3.DatabaseError):
        for (task_id,) in conn.execute("SELECT task_id FROM tasks"):  # rows up to the damage
            seen = max(seen, task_id)
    marks = [m for m in (hwm, floor) if m is not None]
    return max(seen, *marks) if marks else max(seen, int(time.time()))


def _move_aside(path: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target, n = f"{path}.corrupt-{stamp}", 0
    while any(os.path.lexists(target + s) for s in SIBLINGS):
        n += 1
        target = f"{path}.corrupt-{stamp}-{n}"
    # All three go, keeping sqlite's naming: a stale -wal next to the fresh file would be replayed.
    for suffix in SIBLINGS:
        with contextlib.suppress(FileNotFoundError):
            os.replace(path + suffix, target + suffix)
    return target


def _tail(text: str, limit: int) -> str:
    data = text.encode("utf-8", "replace")  # a lone surrogate would make sqlite refuse the row
    if len(data) > limit:
        data = data[len(data) - limit:]
        start = 0
        while start < len(data) and data[start] & 0xC0 == 0x80:  # continuation bytes of a cut char
            start += 1
        data = data[start:]
    return data.decode("utf-8")
