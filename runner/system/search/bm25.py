"""FTS5's bm25 for a worktree's overlay rows, computed with its base index's statistics (row count,
average length, how many rows hold each phrase): scored by the overlay's own few rows, a rare word
of the worktree's edit would weigh like a common one and rank below every base hit. The formula
and constants are FTS5's (fts5_aux.c): idf floored at 1e-6, column weights on term frequencies,
a row's length over all its columns."""

import math
import re
import sqlite3
import threading

K1, B = 1.2, 0.75
PHRASE = re.compile(r'"([^"]*)"(\*?)')  # the phrases of a MATCH expression, a prefix one with its *
AND_GROUP = re.compile(r'\((?:"[^"]*"\*? AND )+"[^"]*"\*?\)')  # a compound word's parts: ("none" AND "type")


class Stats:
    """Scores over one connection that has the overlay as main and the base ATTACHed as `base`."""

    def __init__(self, db: sqlite3.Connection, lock: threading.RLock) -> None:
        self._db = db
        self._lock = lock
        self._docs: dict[str, dict[int, tuple[int, dict[tuple[str, str], int]]]] = {}
        # (schema, table, phrase, prefix) -> idf, until either side is written: each is a count of
        # the rows matching it, ms for a common word, asked by every query the overlay answers.
        self._idfs: dict[tuple[str, str, str, bool], float] = {}
        self._base_version: int | None = None

    def changed(self) -> None:
        """The overlay was written: its rows' term counts are read again."""
        self._docs.clear()
        self._idfs.clear()

    def score(self, table: str, weights: dict[str, float], match: str, rowids: list[int]) -> dict[int, float]:
        """rowid -> bm25 (higher is better) of these overlay rows of `table` for `match`; a column
        not in weights weighs 1.0, as FTS5's do."""
        if not rowids:
            return {}
        with self._lock:
            version = self._db.execute("PRAGMA base.data_version").fetchone()[0]
            if version != self._base_version:
                self._idfs.clear()
                self._base_version = version
            schema = "base"
            n_row, avgdl = self._totals(schema, table)
            if n_row == 0:  # an empty base: the overlay's own statistics are all there is
                schema = "main"
                n_row, avgdl = self._totals(schema, table)
            found = list(PHRASE.finditer(match))
            phrases = [(m.group(1).lower(), m.group(2) == "*") for m in found]
            idf = [self._idf(schema, table, text, prefix, n_row) for text, prefix in phrases]
            docs = self._overlay_docs(table)
        # A compound word's parts are an AND (tokens.fts_query): where one is missing FTS5 counts none of them.
        spans = [m.span() for m in AND_GROUP.finditer(match)]
        group = [next((i for i, (a, b) in enumerate(spans) if a <= m.start() < b), None) for m in found]
        out = {}
        for rowid in rowids:
            dl, counts = docs.get(rowid, (0, {}))
            freqs = [sum(n * weights.get(col, 1.0) for (term, col), n in counts.items()
                         if term == text or (prefix and term.startswith(text))) for text, prefix in phrases]
            missing = {g for g, f in zip(group, freqs) if g is not None and not f}
            total = 0.0
            for f, weight, g in zip(freqs, idf, group):
                if f and g not in missing:
                    total += weight * (f * (K1 + 1)) / (f + K1 * (1 - B + B * dl / max(avgdl, 1e-9)))
            out[rowid] = total
        return out

    def _totals(self, schema: str, table: str) -> tuple[int, float]:
        return totals(self._db, schema, table)

    def _idf(self, schema: str, table: str, text: str, prefix: bool, n_row: int) -> float:
        key = (schema, table, text, prefix)
        if key not in self._idfs:
            self._idfs[key] = self._count_idf(schema, table, text, prefix, n_row)
        return self._idfs[key]

    def _count_idf(self, schema: str, table: str, text: str, prefix: bool, n_row: int) -> float:
        phrase = '"' + text.replace('"', "") + '"' + ("*" if prefix else "")
        hits = self._db.execute(f"SELECT count(*) FROM {schema}.{table} t WHERE t.{table} MATCH ?",
                                (phrase,)).fetchone()[0]
        idf = math.log((n_row - hits + 0.5) / (hits + 0.5))
        return idf if idf > 0 else 1e-6

    def _overlay_docs(self, table: str) -> dict[int, tuple[int, dict[tuple[str, str], int]]]:
        """rowid -> (tokens in the row, (term, column) -> count), for every overlay row of table."""
        if table not in self._docs:
            self._db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.overlay_{table} "
                             f"USING fts5vocab(main, {table}, instance)")
            docs: dict[int, tuple[int, dict[tuple[str, str], int]]] = {}
            for doc, term, col, n in self._db.execute(
                    f"SELECT doc, term, col, count(*) FROM temp.overlay_{table} GROUP BY doc, term, col"):
                dl, counts = docs.get(doc, (0, {}))
                counts[(term, col)] = n
                docs[doc] = (dl + n, counts)
            self._docs[table] = docs
        return self._docs[table]


def totals(db: sqlite3.Connection, schema: str, table: str) -> tuple[int, float]:
    """(rows, average tokens per row) from FTS5's averages record: a varint row count, then
    one varint per column of tokens in it."""
    row = db.execute(f"SELECT block FROM {schema}.{table}_data WHERE id=1").fetchone()
    values = varints(row[0]) if row and row[0] else []
    if not values or values[0] == 0:
        return 0, 0.0
    return values[0], sum(values[1:]) / values[0]


def varints(data: bytes) -> list[int]:
    """SQLite's varints (big-endian 7 bits a byte, the ninth byte whole), as FTS5 writes them."""
    out, i = [], 0
    while i < len(data):
        value = 0
        for n in range(9):
            byte = data[i]
            i += 1
            if n == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        out.append(value)
    return out
