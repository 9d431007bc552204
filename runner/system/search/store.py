"""The search index's engine, behind core's port (runner/core/search/store.py): SQLite FTS5 (in
the standard library, BM25 built in, one file on disk that survives restarts, transactions that
let queries read while a build writes). A chunk's rowid is its file's id * SPAN + its number, so
a file is replaced by a rowid range delete instead of a scan of an unindexed column."""

import json
import sqlite3
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Callable, Iterable

from runner.system.search.rescore import Groups, Rescorer

# A chunk's (rowid, path, start, end, symbol) read from FTS5's own content table (its columns c0..c4 in
# the order the table declares them): through the full-text table each row costs half as much again.
CONTENT = "id, c2, c3, c4, c0"
SPAN = 100_000  # chunks (and definitions) per file at most: 1 MiB / 30-line windows is far below
TOKENIZE = "unicode61 tokenchars '_'"  # snake_case stays one token; expand() adds its parts

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files(id INTEGER PRIMARY KEY, path TEXT UNIQUE, mtime REAL, size INTEGER,
                                 factor REAL, lang TEXT, sha TEXT);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks USING fts5(symbol, body, path UNINDEXED, start UNINDEXED,
                                                     end UNINDEXED, tokenize="{TOKENIZE}");
CREATE VIRTUAL TABLE IF NOT EXISTS defs USING fts5(name, path UNINDEXED, line UNINDEXED, kind UNINDEXED,
                                                   raw UNINDEXED, tokenize="{TOKENIZE}");
CREATE VIRTUAL TABLE IF NOT EXISTS commits USING fts5(subject, body, paths, diff, hash UNINDEXED,
                                                      date UNINDEXED, raw UNINDEXED, tokenize="{TOKENIZE}");
CREATE TABLE IF NOT EXISTS vectors(rowid INTEGER PRIMARY KEY, vec BLOB);
CREATE TABLE IF NOT EXISTS shared(path TEXT PRIMARY KEY, mtime REAL, size INTEGER, sha TEXT);
CREATE TABLE IF NOT EXISTS hidden(hash TEXT PRIMARY KEY);
"""
# shared and hidden are a worktree's (overlay.py): the base's files it has byte for byte, and the
# base's commits its HEAD does not reach. A repository's own index leaves them empty.
# Bumped when a table's columns change: an index on disk from before is dropped and rebuilt
# (a restart after an upgrade costs one build, not a query error).
SCHEMA_VERSION = "3"
TABLES = ("files", "chunks", "defs", "commits", "vectors", "shared", "hidden", "meta")
FTS_TABLES = ("chunks", "defs", "commits")
MERGE_PAGES = 200  # pages one compaction step writes (tens of ms): a query waits for one step at most


@dataclass(frozen=True)
class Hit:
    path: str
    start: int
    end: int
    symbol: str
    score: float  # higher is better
    # The chunk in its store, as matching() names it: its file's id * SPAN + its number (an overlay's
    # own negated). Not (path, start): a file's chunks may share a first line.
    rowid: int = 0


@dataclass(frozen=True)
class DefHit:
    name: str
    path: str
    line: int
    kind: str
    score: float


@dataclass(frozen=True)
class Commit:
    hash: str
    date: str
    subject: str
    body: str
    paths: tuple[str, ...]
    diff: str = ""  # the lines it added and removed, bounded (history.MAX_DIFF_CHARS)



class SqliteStore:
    """One workspace's index in one SQLite file; every call holds the lock (the build thread
    writes in small transactions, so a query waits at most one batch)."""

    def __init__(self, path: str, expand: Callable[[str], str]) -> None:
        """expand: what the index tokenizes of a text (core's tokens.expand: identifiers and their parts)."""
        self._expand = expand
        # A URI, so a worktree's store can ATTACH its base read-only (overlay.py).
        self._db = sqlite3.connect("file:" + urllib.parse.quote(path), uri=True, check_same_thread=False,
                                   isolation_level=None)
        self.lock = threading.RLock()
        self.vectors_version = 0  # bumped when a chunk vector is written or dropped (semantic.Vectors reloads)
        self._writes = 0  # bumped by each file written or dropped: changes(), a cache's key (postings.py)
        self._rescorer = Rescorer(self._db, "chunks", (4.0, 1.0))  # the weights chunks() gives bm25
        self._counts: tuple[tuple, dict[str, int]] = ((), {})  # count()'s, kept while changes() stays
        with self.lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
            if self.get_meta("schema") != SCHEMA_VERSION:
                for table in TABLES:
                    self._db.execute(f"DROP TABLE IF EXISTS {table}")
                self._db.executescript(SCHEMA)
                self.set_meta("schema", SCHEMA_VERSION)

    def close(self) -> None:
        with self.lock:
            self._db.close()

    def batch(self):
        """A transaction: `with store.batch(): ...` (the lock held throughout)."""
        return _Batch(self)

    def get_meta(self, key: str) -> str | None:
        with self.lock:
            row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.lock:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES(?,?)", (key, value))

    def stamps(self) -> dict[str, tuple[float, int]]:
        with self.lock:
            return {p: (m, s) for p, m, s in self._db.execute("SELECT path, mtime, size FROM files")}

    def put_file(self, path, mtime, size, factor, lang, chunks, defs, sha=None) -> None:
        """chunks: each with .start, .end, .symbol, .text; defs: each with .name, .line, .kind;
        sha: the digest of the bytes indexed (None: skipped, a binary or a huge file)."""
        expand = self._expand
        with self.lock:
            self.drop_file(path)
            self._writes += 1
            fid = self._db.execute("INSERT INTO files(path, mtime, size, factor, lang, sha) VALUES(?,?,?,?,?,?)",
                                   (path, mtime, size, factor, lang, sha)).lastrowid
            base = fid * SPAN
            self._db.executemany("INSERT INTO chunks(rowid, symbol, body, path, start, end) VALUES(?,?,?,?,?,?)",
                                 [(base + i, expand(c.symbol), expand(c.text), path, c.start, c.end)
                                  for i, c in enumerate(chunks[:SPAN])])
            self._db.executemany("INSERT INTO defs(rowid, name, path, line, kind, raw) VALUES(?,?,?,?,?,?)",
                                 [(base + i, expand(d.name), path, d.line, d.kind, d.name)
                                  for i, d in enumerate(defs[:SPAN])])

    def changes(self) -> tuple:
        """Moves whenever a file's rows change (a cache of answers is kept until it does)."""
        return (self._writes,)

    def base_shas(self) -> dict[str, str]:
        """The digests of the base index's files a worktree may share (overlay.py); none here."""
        return {}

    def stale_shared(self) -> list[str]:
        return []

    def share(self, path: str, mtime: float, size: int, sha: str) -> None:
        raise NotImplementedError("a repository's own index shares nothing: base_shas() is empty")

    def unembedded(self, limit: int) -> list[tuple[int, str, int, int, str]]:
        """(rowid, path, start, end, symbol) of chunks the semantic layer has no vector for yet."""
        with self.lock:
            rows = self._db.execute("SELECT c.rowid, c.path, c.start, c.end, c.symbol FROM chunks c "
                                    "WHERE c.rowid NOT IN (SELECT rowid FROM vectors) LIMIT ?", (limit,)).fetchall()
        return [(r, p, int(a), int(b), sym.split("\n")[0]) for r, p, a, b, sym in rows]

    def put_vectors(self, pairs: list[tuple[int, bytes]]) -> None:
        """Chunk vectors by rowid; a chunk replaced meanwhile (its file saved again) gets none."""
        with self.lock:
            self._db.executemany("INSERT OR REPLACE INTO vectors(rowid, vec) SELECT ?, ? "
                                 "WHERE EXISTS (SELECT 1 FROM chunks WHERE rowid = ?)",
                                 [(r, v, r) for r, v in pairs])
            self.vectors_version += 1

    def embedded(self) -> tuple[int, int]:
        """(chunks with a vector, chunks)."""
        with self.lock:
            return (self._db.execute("SELECT count(*) FROM vectors").fetchone()[0],
                    self._db.execute("SELECT count(*) FROM chunks").fetchone()[0])

    def clear_vectors(self) -> None:
        """Every chunk vector of this store gone (the semantic layer's model changed: old vectors do
        not compare). An overlay clears its own; the base's are its own index's to clear."""
        with self.lock:
            self._db.execute("DELETE FROM vectors")
            self.vectors_version += 1

    def vectors(self) -> list[tuple[int, bytes]]:
        with self.lock:
            return self._db.execute("SELECT rowid, vec FROM vectors").fetchall()

    def chunks_at(self, rowids: list[int], glob=None, lang=None) -> list[Hit]:
        """The chunks with these rowids, in that order, scored by their file's factor alone."""
        sql = ("SELECT c.rowid, c.path, c.start, c.end, c.symbol, f.factor FROM chunks c JOIN files f "
               "ON f.path = c.path WHERE c.rowid IN (SELECT value FROM json_each(?))"
               + (" AND f.path GLOB ?" if glob else "") + (" AND f.lang = ?" if lang else ""))
        args = [json.dumps(rowids)] + ([glob] if glob else []) + ([lang] if lang else [])
        with self.lock:
            rows = {r[0]: r[1:] for r in self._db.execute(sql, args)}
        return [Hit(p, int(a), int(b), sym.split("\n")[0], factor, r)
                for r in rowids if r in rows for p, a, b, sym, factor in [rows[r]]]

    def restamp(self, path: str, mtime: float, size: int) -> None:
        """The file's stamp only: its indexed content is known to be what is on disk now."""
        with self.lock:
            self._db.execute("UPDATE files SET mtime=?, size=? WHERE path=?", (mtime, size, path))

    def drop_file(self, path: str) -> None:
        with self.lock:
            row = self._db.execute("SELECT id FROM files WHERE path=?", (path,)).fetchone()
            if row is None:
                return
            self._writes += 1
            lo, hi = row[0] * SPAN, row[0] * SPAN + SPAN - 1
            self._db.execute("DELETE FROM chunks WHERE rowid BETWEEN ? AND ?", (lo, hi))
            self._db.execute("DELETE FROM defs WHERE rowid BETWEEN ? AND ?", (lo, hi))
            if self._db.execute("DELETE FROM vectors WHERE rowid BETWEEN ? AND ?", (lo, hi)).rowcount:
                self.vectors_version += 1
            self._db.execute("DELETE FROM files WHERE id=?", (row[0],))

    def chunks(self, match, limit, glob=None, lang=None, rescore: Groups = ()) -> list[Hit]:
        """The best `limit` chunks by BM25 times their file's factor. Ranked by rowid and score alone,
        joined to their file by id: a row's path, start and symbol sit past its body in the content
        table, and reading them for each of thousands of matching rows was most of a plain-words
        question (issue 46); they are read for the `limit` chosen only. rescore: words left out of
        the match (too common to retrieve by), their bm25 share added to the `limit` candidates the
        match ranks first (rescore.py), as if they had been ORed into it, and the candidates re-sorted."""
        where = (" AND f.path GLOB ?" if glob else "") + (" AND f.lang = ?" if lang else "")
        args = ([glob] if glob else []) + ([lang] if lang else [])
        with self.lock:
            top = self._db.execute(
                "SELECT c.rowid, -bm25(chunks, 4.0, 1.0) AS s, f.factor FROM chunks c JOIN files f "
                f"ON f.id = c.rowid / {SPAN} WHERE chunks MATCH ?{where} ORDER BY s * f.factor DESC LIMIT ?",
                [match, *args, limit]).fetchall()
            top = rescored(top, self._rescorer.shares(self.changes(), "main", "main", [r for r, _, _ in top], rescore),
                            limit)
            rows = {r: (p, a, b, sym) for r, p, a, b, sym in self._db.execute(
                f"SELECT {CONTENT} FROM chunks_content WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps([r for r, _ in top]),))}
        return [Hit(p, int(a), int(b), sym.split("\n")[0], s, r) for r, s in top if r in rows
                for p, a, b, sym in [rows[r]]]

    def count(self, match) -> int:
        """How many chunks the expression matches (a query's plan: which words retrieve candidates),
        kept until the index changes."""
        with self.lock:
            stamp = self.changes()
            if self._counts[0] != stamp or len(self._counts[1]) > 4096:
                self._counts = (stamp, {})
            counts = self._counts[1]
            if match not in counts:
                counts[match] = self._count_rows(match)
            return counts[match]

    def _count_rows(self, match) -> int:
        return self._db.execute("SELECT count(*) FROM chunks WHERE chunks MATCH ?", (match,)).fetchone()[0]

    def defs(self, match, limit, glob=None, lang=None) -> list[DefHit]:
        # Joined to the file by id (a definition's rowid is in its file's range), not by its path.
        sql = ("SELECT d.raw, d.path, d.line, d.kind, -bm25(defs) * f.factor AS s "
               f"FROM defs d JOIN files f ON f.id = d.rowid / {SPAN} WHERE defs MATCH ?"
               + (" AND f.path GLOB ?" if glob else "") + (" AND f.lang = ?" if lang else "")
               + " ORDER BY s DESC LIMIT ?")
        args = [match] + ([glob] if glob else []) + ([lang] if lang else []) + [limit]
        with self.lock:
            rows = self._db.execute(sql, args).fetchall()
        return [DefHit(n, p, int(line), k, s) for n, p, line, k, s in rows]

    def matching(self, match, glob=None, lang=None) -> list[tuple[str, int]]:
        """(path, rowid) of every chunk the expression matches, unranked: which chunks and files
        hold a word at all (a plain-words question's coverage, concept.py). The path is its file's,
        joined by id: a chunk's own columns sit past its body in the content table, and reading
        them for each of thousands of rows was 4-5x the match itself."""
        sql = (f"SELECT f.path, c.rowid FROM chunks c JOIN files f ON f.id = c.rowid / {SPAN} WHERE chunks MATCH ?"
               + (" AND f.path GLOB ?" if glob else "") + (" AND f.lang = ?" if lang else ""))
        args = [match] + ([glob] if glob else []) + ([lang] if lang else [])
        with self.lock:
            return self._db.execute(sql, args).fetchall()

    def file_count(self) -> int:
        with self.lock:
            return self._db.execute("SELECT count(*) FROM files").fetchone()[0]

    def compact(self) -> bool:
        """One step of merging each full-text table's segments into one (FTS5's 'merge' with a negative
        page count takes every level): a build written in batches leaves many segments, and each word
        of a query is looked up in every one (issue 46: a pasted error's definitions 1.8 -> 0.6 ms, its
        phrases 3.4 -> 2.1). True while a table had work left (FTS5 makes 2+ changes when it merges)."""
        worked = False
        with self.lock:
            for table in FTS_TABLES:
                before = self._db.total_changes
                self._db.execute(f"INSERT INTO main.{table}({table}, rank) VALUES('merge', ?)", (-MERGE_PAGES,))
                worked = worked or self._db.total_changes - before >= 2
        return worked

    def add_commits(self, commits: Iterable[Commit]) -> None:
        expand = self._expand
        with self.lock:
            self._db.executemany(
                "INSERT INTO commits(subject, body, paths, diff, hash, date, raw) VALUES(?,?,?,?,?,?,?)",
                [(expand(c.subject), expand(c.body), expand(" ".join(c.paths)), expand(c.diff), c.hash, c.date,
                  json.dumps([c.subject, c.body, list(c.paths)])) for c in commits])

    def commit_hashes(self) -> list[str]:
        with self.lock:
            return [h for (h,) in self._db.execute("SELECT hash FROM commits")]

    def drop_commits(self, hashes: Iterable[str]) -> None:
        with self.lock:
            # One scan of the table for the lot (hash is not indexed: a branch switch drops many).
            self._db.execute("DELETE FROM commits WHERE hash IN (SELECT value FROM json_each(?))",
                             (json.dumps(list(hashes)),))

    def commits(self, match, limit) -> list[tuple[Commit, float]]:
        with self.lock:
            rows = self._db.execute(
                "SELECT hash, date, raw, -bm25(commits, 4.0, 1.0, 2.0, 0.5) AS s FROM commits "
                "WHERE commits MATCH ? ORDER BY s DESC LIMIT ?", (match, limit)).fetchall()
        out = []
        for h, d, raw, score in rows:
            subject, body, paths = json.loads(raw)
            out.append((Commit(h, d, subject, body, tuple(paths)), score))
        return out


def rescored(top: list[tuple[int, float, float]], shares: dict[int, float], limit: int) -> list[tuple[int, float]]:
    """(rowid, score) of the best `limit` of (rowid, bm25, factor) once each row's share is added."""
    scored = [(r, (s + shares.get(r, 0.0)) * f) for r, s, f in top]
    if shares:
        scored.sort(key=lambda t: -t[1])
    return scored[:limit]


class _Batch:
    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    def __enter__(self) -> SqliteStore:
        self._store.lock.acquire()
        self._store._db.execute("BEGIN")
        return self._store

    def __exit__(self, exc_type, *_) -> None:
        try:
            self._store._db.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self._store.lock.release()
