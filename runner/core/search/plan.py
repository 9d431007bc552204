"""Query planning (issue 46): which of a query's words retrieve its candidate chunks and which only
rescore them. FTS5's bm25 scores every row its expression matches: the common words of a pasted error
(`str`, `object`, `os`) made one query score 17,000 of 43,000 chunks, 25 ms for the little rank they
add. The rarer words retrieve; the others' bm25 share is added to the candidates (the store's
rescore), so a candidate is scored as the whole expression would score it."""

from typing import Callable

from runner.core.search import tokens
from runner.core.search.store import Hit, IndexStore

# Rows the retrieving words may match together (past the rarest one): FTS5 scores ~1 row a microsecond.
# 2,000 cost the stdlib-dev set's plain-words questions 0.025 NDCG@10; 4,000 none of any set.
RETRIEVE_ROWS = 4000
# A pasted error's answer leads with the chunks spelling its message (exact.phrase_first); its words
# rank the rest: 2,000 rows changed no error query's NDCG@10 or recall on any set, ~2 ms less each.
ERROR_ROWS = 2000
# Candidates per result rescored: a common word's share can lift one the rarer words ranked lower.
DEPTH = 2


def split(store: IndexStore, words: list[str], cap: int = RETRIEVE_ROWS) -> tuple[list[str], list[str]]:
    """(the words that retrieve, the words that rescore), each in the query's order with its repeats
    (a word written twice is two phrases of the expression, and scores twice): the rarest words while
    their rows stay under cap, the rarest always; every word retrieves where all of them fit."""
    spelled = {w.lower(): w for w in reversed(words)}  # the first spelling: camelCase has parts to match
    if len(spelled) < 2:
        return words, []
    rows = {w: store.count(tokens.fts_query([spelled[w]])) for w in spelled}
    chosen = pick(rows, cap)
    return [w for w in words if w.lower() in chosen], [w for w in words if w.lower() not in chosen]


def pick(rows: dict[str, int], cap: int = RETRIEVE_ROWS) -> set[str]:
    """Of words -> the rows each matches, those that retrieve: all where they fit under cap, else the
    rarest while they do (the rarest always)."""
    if sum(rows.values()) <= cap:
        return set(rows)
    chosen, total = set(), 0
    for w in sorted(rows, key=lambda w: rows[w]):
        if chosen and total + rows[w] > cap:
            break
        chosen.add(w)
        total += rows[w]
    return chosen


def groups(words: list[str], stem: Callable[[str], str] | None = None) -> tuple[tuple[str, ...], ...]:
    """The tokens each word adds to tokens.fts_query's expression: the word whole, and a compound
    word's parts, which match only all together; with stem, concept.match's `"stem"*` too."""
    out: list[tuple[str, ...]] = []
    for w in words:
        out.append((w.lower().replace('"', ""),))
        if ps := tokens.parts(w):
            out.append(tuple(ps))
        if stem is not None and (s := stem(w)) != w.lower() and s.isalnum():
            out.append((s + "*",))
    return tuple(out)


def chunks(store: IndexStore, words: list[str], limit: int, glob: str | None, lang: str | None,
           cap: int = RETRIEVE_ROWS) -> list[Hit]:
    """The best `limit` chunks for tokens.fts_query(words), the common words rescoring only."""
    find, rest = split(store, words, cap)
    if not rest:
        return store.chunks(tokens.fts_query(find), limit, glob, lang)
    return store.chunks(tokens.fts_query(find), limit * DEPTH, glob, lang, groups(rest))[:limit]
