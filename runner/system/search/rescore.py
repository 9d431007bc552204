"""A common word's share of each candidate's bm25, added after the rarer words found the candidates
(issue 46): FTS5 scores every row its expression matches, and a pasted TypeError's `str`, `os` and
`object` made one query score 17,000 of 43,000 chunks (25 ms of its 28) for little rank. FTS5's bm25
is a sum over the expression's phrases, so the words left out of the MATCH are scored here, for the
few candidates only, as FTS5 scores a phrase (bm25.py): their count in each column of the chunk's
own text, the chunk's length from FTS5's docsize record, the table's row count and average length,
and how many rows hold the word. Tokens are read as unicode61 cuts them for an ASCII word (runs of
letters, digits and '_', case folded); a word spelled with diacritics in the code may count less."""

import json
import math
import re
import sqlite3

from runner.system.search.bm25 import B, K1, totals, varints

# A group is the tokens one word contributes: the word whole, or the parts of a compound word, which
# FTS5 matched only all together (tokens.fts_query: `"none" AND "type"`); a group counts where all are.
# A token ending in `*` is a prefix (concept.match's stems: `"recurs"*`): any token it begins counts.
Groups = tuple[tuple[str, ...], ...]


class Rescorer:
    """bm25 shares of left-out words for the rows of one FTS5 table, on the caller's connection and
    under its lock; the rows holding each word are counted once until `stamp` moves."""

    def __init__(self, db: sqlite3.Connection, table: str, weights: tuple[float, ...]) -> None:
        self._db, self._table, self._weights = db, table, weights
        self._stamp: object = None
        self._hits: dict[tuple[str, str], int] = {}

    def shares(self, stamp: object, stats: str, rows: str, rowids: list[int], groups: Groups) -> dict[int, float]:
        """rowid -> the bm25 (higher is better) of the groups' tokens in these rows of `rows`.table,
        with the statistics of `stats`.table (a worktree's own rows are scored by its base's)."""
        if not groups or not rowids:
            return {}
        if stamp != self._stamp:
            self._stamp, self._hits = stamp, {}
        n_row, avgdl = totals(self._db, stats, self._table)
        if n_row == 0:
            return {}
        terms = list(dict.fromkeys(t for g in groups for t in g))
        idf = {t: self._idf(stats, t, n_row) for t in terms}
        # A literal first, so re seeks it fast; a whole token ends where no word character follows.
        ends = {t: re.compile(re.escape(t[:-1]) if t.endswith("*") else re.escape(t) + r"(?!\w)") for t in terms}
        table = self._table
        found = self._db.execute(
            f"SELECT c.id, d.sz, {', '.join(f'c.c{i}' for i in range(len(self._weights)))} FROM {rows}.{table}_content c "
            f"JOIN {rows}.{table}_docsize d ON d.id = c.id WHERE c.id IN (SELECT value FROM json_each(?))",
            (json.dumps(rowids),)).fetchall()
        out = {}
        for rowid, size, *texts in found:
            freq: dict[str, float] = {}
            for weight, text in zip(self._weights, texts):
                low = text.lower() if text else ""
                for t in terms:
                    if t.rstrip("*") in low and (n := _tokens(low, ends[t])):
                        freq[t] = freq.get(t, 0.0) + weight * n
            if not freq:
                out[rowid] = 0.0
                continue
            dl = sum(varints(size)) if size else 0
            norm = K1 * (1 - B + B * dl / max(avgdl, 1e-9))
            total = 0.0
            for group in groups:
                if all(t in freq for t in group):
                    total += sum(idf[t] * (freq[t] * (K1 + 1)) / (freq[t] + norm) for t in group)
            out[rowid] = total
        return out

    def _idf(self, schema: str, term: str, n_row: int) -> float:
        key = (schema, term)
        if key not in self._hits:
            phrase = '"' + term.rstrip("*").replace('"', "") + '"' + ("*" if term.endswith("*") else "")
            self._hits[key] = self._db.execute(f"SELECT count(*) FROM {schema}.{self._table} t WHERE t.{self._table} "
                                               "MATCH ?", (phrase,)).fetchone()[0]
        hits = self._hits[key]
        idf = math.log((n_row - hits + 0.5) / (hits + 0.5))
        return idf if idf > 0 else 1e-6


def _tokens(low: str, end: re.Pattern) -> int:
    """How many tokens of `low` the pattern matches from their start (the start checked by hand: a
    pattern opening on a look-behind is tried at every character)."""
    n = 0
    for m in end.finditer(low):
        i = m.start()
        if i == 0 or not (low[i - 1].isalnum() or low[i - 1] == "_"):
            n += 1
    return n
