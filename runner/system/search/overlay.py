"""OverlayStore: a worktree's index as its repository's base index plus a small overlay of its own.

The overlay (this SQLite file, one per worktree) holds the files that differ from the base (added,
edited, or skipped there), the base's files the worktree has byte for byte (`shared`: path, stamp
and the digest of the bytes), the worktree's own commits and the base commits its HEAD does not
reach (`hidden`). The base (the main checkout's index) is ATTACHed read only: nothing done for a
worktree, whatever a sandboxed worker wrote in it, changes what the base answers to anyone else.

The worktree's truth is enforced in every query, not only when the overlay is made: a base row
answers only through a `shared` row whose digest is the one the base indexed for that path now, so
a file deleted or edited in the worktree, or one the base re-indexed since, never answers from the
base. Overlay rows are scored with the base's statistics (bm25.py), so a worktree's edit ranks as
it would in the base, not by the idf of a corpus of a few files.
"""

import json
import urllib.parse
from typing import Callable, Iterable

from runner.system.search import bm25
from runner.system.search.store import (CONTENT, SCHEMA_VERSION, SPAN, Commit, DefHit, Hit,
                                           SqliteStore, rescored)

NEG = -1  # an overlay chunk's rowid is negated where rowids of both meet (vectors): the base's are positive


class OverlayStore(SqliteStore):
    def __init__(self, path: str, base_path: str, expand: Callable[[str], str]) -> None:
        super().__init__(path, expand)
        with self.lock:
            self._db.execute("ATTACH DATABASE ? AS base", ("file:" + urllib.parse.quote(base_path) + "?mode=ro",))
            schema = self._db.execute("SELECT value FROM base.meta WHERE key='schema'").fetchone()
            if schema is None or schema[0] != SCHEMA_VERSION:
                raise ValueError(f"the base index {base_path} is of another schema")
            self._db.execute("CREATE TEMP TABLE IF NOT EXISTS live(id INTEGER PRIMARY KEY, factor REAL, path TEXT, lang TEXT)")
        self._stats = bm25.Stats(self._db, self.lock)
        self._base_version: int | None = None
        self._count: tuple[tuple[int, int], int] | None = None
        self._live_key: tuple | None = None

    def _changed(self) -> None:
        self._stats.changed()
        self._writes += 1

    def changes(self) -> tuple:
        """The overlay's writes and the base's (another connection's: its data_version)."""
        with self.lock:
            return self._writes, self._db.execute("PRAGMA base.data_version").fetchone()[0]

    # --- what a worktree shares ------------------------------------------------------------------
    def base_shas(self) -> dict[str, str]:
        with self.lock:
            return dict(self._db.execute("SELECT path, sha FROM base.files WHERE sha IS NOT NULL"))

    def share(self, path: str, mtime: float, size: int, sha: str) -> None:
        with self.lock:
            super().drop_file(path)
            self._db.execute("INSERT OR REPLACE INTO shared VALUES(?,?,?,?)", (path, mtime, size, sha))
            self._changed()

    def stamps(self) -> dict[str, tuple[float, int]]:
        """The overlay's files and the shared ones; a shared file the base has re-indexed (or
        dropped) since is stamped (-1, -1): changed, so it is read again."""
        with self.lock:
            out = super().stamps()
            for p, m, s in self._db.execute("SELECT s.path, CASE WHEN f.sha IS s.sha THEN s.mtime ELSE -1 END, "
                                            "CASE WHEN f.sha IS s.sha THEN s.size ELSE -1 END FROM shared s "
                                            "LEFT JOIN base.files f ON f.path = s.path"):
                out[p] = (m, s)
            return out

    def stale_shared(self) -> list[str]:
        """The shared files the base has re-indexed or dropped since they were shared: read again.
        Looked for only when the base was written since the last look (its data_version moved)."""
        with self.lock:
            version = self._db.execute("PRAGMA base.data_version").fetchone()[0]
            if version == self._base_version:
                return []
            self._base_version = version
            return [p for (p,) in self._db.execute("SELECT s.path FROM shared s LEFT JOIN base.files f "
                                                   "ON f.path = s.path WHERE f.sha IS NOT s.sha")]

    def put_file(self, path, mtime, size, factor, lang, chunks, defs, sha=None) -> None:
        with self.lock:
            self._db.execute("DELETE FROM shared WHERE path=?", (path,))
            super().put_file(path, mtime, size, factor, lang, chunks, defs, sha)
            self._changed()

    def restamp(self, path: str, mtime: float, size: int) -> None:
        with self.lock:
            super().restamp(path, mtime, size)
            self._db.execute("UPDATE shared SET mtime=?, size=? WHERE path=?", (mtime, size, path))

    def drop_file(self, path: str) -> None:
        with self.lock:
            self._db.execute("DELETE FROM shared WHERE path=?", (path,))
            super().drop_file(path)
            self._changed()

    def overlay_rows(self) -> dict[str, int]:
        """How small the overlay is: its rows per table (the tests and the bench count them)."""
        with self.lock:
            return {t: self._db.execute(f"SELECT count(*) FROM main.{t}").fetchone()[0]
                    for t in ("files", "chunks", "defs", "commits", "shared", "hidden")}

    # --- queries: the base through `shared`, the overlay scored alike -----------------------------
    def _live(self) -> None:
        """temp.live: the base's files this worktree has byte for byte (`shared` whose digest is the
        base's), made again whenever either side was written. Joined by file id, it spares each
        matching base row a look-up of `shared` by path (a third of a worktree's plain-words question)."""
        key = self.changes()
        if key == self._live_key:
            return
        self._db.execute("DELETE FROM temp.live")
        self._db.execute("INSERT INTO temp.live SELECT f.id, f.factor, f.path, f.lang FROM base.files f "
                         "JOIN shared h ON h.path = f.path AND h.sha = f.sha")
        self._live_key = None if self._db.in_transaction else key  # a batch may yet roll back

    def chunks(self, match, limit, glob=None, lang=None, rescore=()) -> list[Hit]:
        where, args = _filters(glob, lang)
        with self.lock:
            self._live()
            stamp = self.changes()
            top = self._db.execute(  # by rowid and score first, as SqliteStore.chunks does (why there)
                f"SELECT c.rowid, -bm25(c.chunks, 4.0, 1.0) AS s, f.factor FROM base.chunks c JOIN temp.live f "
                f"ON f.id = c.rowid / {SPAN} WHERE c.chunks MATCH ?{where} ORDER BY s * f.factor DESC LIMIT ?",
                [match, *args, limit]).fetchall()
            top = rescored(top, self._rescorer.shares(stamp, "base", "base", [r for r, _, _ in top], rescore), limit)
            cols = {r: (p, a, b, sym) for r, p, a, b, sym in self._db.execute(
                f"SELECT {CONTENT} FROM base.chunks_content WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps([r for r, _ in top]),))}
            base = [(*cols[r], s, r) for r, s in top if r in cols]  # a row the base dropped meanwhile: gone
            own = self._db.execute(
                "SELECT c.rowid, c.path, c.start, c.end, c.symbol, f.factor FROM main.chunks c "
                f"JOIN main.files f ON f.path = c.path WHERE c.chunks MATCH ?{where}", [match, *args]).fetchall()
            scores = self._stats.score("chunks", {"symbol": 4.0}, match, [r[0] for r in own])
            # The overlay's rows with the base's statistics, as bm25.py scores them (its own where the base is empty).
            shares = (self._rescorer.shares(stamp, "base", "main", [r[0] for r in own], rescore)
                      or self._rescorer.shares(stamp, "main", "main", [r[0] for r in own], rescore))
        found = [Hit(p, int(a), int(b), sym.split("\n")[0], s, r) for p, a, b, sym, s, r in base]
        found += [Hit(p, int(a), int(b), sym.split("\n")[0], (scores[r] + shares.get(r, 0.0)) * factor, NEG * r)
                  for r, p, a, b, sym, factor in own]
        return sorted(found, key=lambda h: -h.score)[:limit]

    def _count_rows(self, match) -> int:
        """The base's rows and the overlay's (a plan's estimate: which words are common here)."""
        return sum(self._db.execute(f"SELECT count(*) FROM {schema}.chunks t WHERE t.chunks MATCH ?",
                                    (match,)).fetchone()[0] for schema in ("base", "main"))

    def defs(self, match, limit, glob=None, lang=None) -> list[DefHit]:
        where, args = _filters(glob, lang)
        with self.lock:
            self._live()
            base = self._db.execute(
                "SELECT d.raw, d.path, d.line, d.kind, -bm25(d.defs) * f.factor AS s FROM base.defs d "
                f"JOIN temp.live f ON f.id = d.rowid / {SPAN} "
                f"WHERE d.defs MATCH ?{where} ORDER BY s DESC LIMIT ?", [match, *args, limit]).fetchall()
            own = self._db.execute(
                "SELECT d.rowid, d.raw, d.path, d.line, d.kind, f.factor FROM main.defs d "
                f"JOIN main.files f ON f.path = d.path WHERE d.defs MATCH ?{where}", [match, *args]).fetchall()
            scores = self._stats.score("defs", {}, match, [r[0] for r in own])
        found = [DefHit(n, p, int(line), k, s) for n, p, line, k, s in base]
        found += [DefHit(n, p, int(line), k, scores[r] * factor) for r, n, p, line, k, factor in own]
        return sorted(found, key=lambda d: -d.score)[:limit]

    def matching(self, match, glob=None, lang=None) -> list[tuple[str, int]]:
        """(path, rowid) as SqliteStore.matching, the overlay's own rowids negated as in chunks()."""
        where, args = _filters(glob, lang)
        with self.lock:
            self._live()
            rows = self._db.execute(f"SELECT f.path, c.rowid FROM base.chunks c JOIN temp.live f ON f.id = c.rowid / {SPAN} "
                                    f"WHERE c.chunks MATCH ?{where}", [match, *args]).fetchall()
            rows += self._db.execute(f"SELECT f.path, {NEG} * c.rowid FROM main.chunks c JOIN main.files f "
                                     f"ON f.id = c.rowid / {SPAN} WHERE c.chunks MATCH ?{where}", [match, *args]).fetchall()
        return rows

    def file_count(self) -> int:
        """Kept until the overlay or the base is written: a plain-words question asks it once per
        word (postings.py), and the join of `shared` with the base's files costs ms each time."""
        with self.lock:
            key = self.changes()
            if self._count is not None and self._count[0] == key:
                return self._count[1]
            count = (self._db.execute("SELECT count(*) FROM main.files").fetchone()[0]
                     + self._db.execute("SELECT count(*) FROM shared h JOIN base.files f ON f.path = h.path "
                                        "AND f.sha = h.sha").fetchone()[0])
            if not self._db.in_transaction:  # a batch may yet roll back what it counted
                self._count = (key, count)
            return count

    # --- vectors: the base's for shared files, the overlay's own (negated rowids) -------------------
    def vectors(self) -> list[tuple[int, bytes]]:
        with self.lock:
            base = self._db.execute(
                "SELECT v.rowid, v.vec FROM base.vectors v JOIN base.chunks c ON c.rowid = v.rowid JOIN base.files f "
                "ON f.path = c.path JOIN shared h ON h.path = f.path AND h.sha = f.sha").fetchall()
            return base + [(NEG * r, v) for r, v in self._db.execute("SELECT rowid, vec FROM main.vectors")]

    def embedded(self) -> tuple[int, int]:
        return super().embedded()  # the overlay's own: the base's are filled by the base's index

    def chunks_at(self, rowids: list[int], glob=None, lang=None) -> list[Hit]:
        """Base rowids (positive, through `shared`) and overlay ones (negated), in the order given."""
        where, args = _filters(glob, lang)
        found = {}
        with self.lock:
            for schema, sign, join in (("base", 1, " JOIN shared h ON h.path = f.path AND h.sha = f.sha"),
                                       ("main", NEG, "")):
                wanted = [sign * r for r in rowids if r * sign > 0]
                for r, p, a, b, sym, factor in self._db.execute(
                        f"SELECT c.rowid, c.path, c.start, c.end, c.symbol, f.factor FROM {schema}.chunks c "
                        f"JOIN {schema}.files f ON f.path = c.path{join} "
                        f"WHERE c.rowid IN (SELECT value FROM json_each(?)){where}", [json.dumps(wanted), *args]):
                    found[sign * r] = Hit(p, int(a), int(b), sym.split("\n")[0], factor, sign * r)
        return [found[r] for r in rowids if r in found]

    # --- commits: the base's the worktree's HEAD reaches, and its own -------------------------------
    def commit_hashes(self) -> list[str]:
        with self.lock:
            return [h for (h,) in self._db.execute(
                "SELECT hash FROM main.commits UNION SELECT hash FROM base.commits "
                "WHERE hash NOT IN (SELECT hash FROM hidden)")]

    def add_commits(self, commits: Iterable[Commit]) -> None:
        commits = list(commits)
        with self.lock:
            self._db.execute("DELETE FROM hidden WHERE hash IN (SELECT value FROM json_each(?))",
                             (json.dumps([c.hash for c in commits]),))
            super().add_commits(commits)
            self._changed()

    def drop_commits(self, hashes: Iterable[str]) -> None:
        hashes = list(hashes)
        with self.lock:
            super().drop_commits(hashes)
            self._db.execute("INSERT OR IGNORE INTO hidden SELECT hash FROM base.commits "
                             "WHERE hash IN (SELECT value FROM json_each(?))", (json.dumps(hashes),))
            self._changed()

    def get_meta(self, key: str) -> str | None:
        value = super().get_meta(key)
        if key == "head" and value is not None and super().get_meta("base_head") != self._base_head():
            return None  # the base moved since the commits were reconciled: reconcile them again
        return value

    def set_meta(self, key: str, value: str) -> None:
        with self.lock:
            super().set_meta(key, value)
            if key == "head":
                super().set_meta("base_head", self._base_head())

    def _base_head(self) -> str:
        with self.lock:
            row = self._db.execute("SELECT value FROM base.meta WHERE key='head'").fetchone()
        return row[0] if row else ""

    def commits(self, match, limit) -> list[tuple[Commit, float]]:
        with self.lock:
            base = self._db.execute(
                "SELECT hash, date, raw, -bm25(m.commits, 4.0, 1.0, 2.0, 0.5) AS s FROM base.commits m "
                "WHERE m.commits MATCH ? AND hash NOT IN (SELECT hash FROM hidden) ORDER BY s DESC LIMIT ?",
                (match, limit)).fetchall()
            own = self._db.execute("SELECT m.rowid, m.hash, m.date, m.raw FROM main.commits m WHERE m.commits MATCH ?",
                                   (match,)).fetchall()
            scores = self._stats.score("commits", {"subject": 4.0, "paths": 2.0, "diff": 0.5}, match, [r[0] for r in own])
        rows = base + [(h, d, raw, scores[r]) for r, h, d, raw in own]
        out = []
        for h, d, raw, score in sorted(rows, key=lambda r: -r[3])[:limit]:
            subject, body, paths = json.loads(raw)
            out.append((Commit(h, d, subject, body, tuple(paths)), score))
        return out


def _filters(glob: str | None, lang: str | None) -> tuple[str, list]:
    return (" AND f.path GLOB ?" if glob else "") + (" AND f.lang = ?" if lang else ""), \
        ([glob] if glob else []) + ([lang] if lang else [])
