"""A query's common words rescore the candidates its rarer words retrieve (runner/core/search/plan.py,
runner/system/search/rescore.py): each candidate's score must be the one FTS5's bm25 gives it for the
whole expression, in a repository's index and in a worktree's overlay (real SQLite, real FTS5)."""

import pytest

from runner.core.search import chunks, concept, plan, tokens
from runner.system.search.overlay import OverlayStore
from runner.system.search.store import SqliteStore

# `value` (a third of the chunks, a definition's name in some: the symbol column weighs 4) and `NoneType`
# (a compound word: its parts match only together) are common; `walrus` and `quokka` rare.


def _file(i: int) -> str:
    text = f"def handler_{i}(x):\n    return compute(x, {i})\n"
    if i % 3 == 0:
        text += f"\ndef value_{i}(x):\n    # Return the value of x.\n    value = x.value\n    return value\n"
    if i % 4 == 0:
        text += f"\ndef check_{i}(x):\n    # NoneType when none of its type.\n    return type(x) is None\n"
    if i % 9 == 0:
        text += "\ndef walrus_value_feeder(value):\n    return 'walrus' + type(value)\n"
    if i % 13 == 0:
        text += "\nclass Quokka:\n    value = 'quokka none type'\n"
    return text


TEXTS = {f"pkg/m{i}.py": _file(i) for i in range(80)}
TEXTS["docs/notes.md"] = "The walrus returns a value; a NoneType value is none of its type. Value, value, value.\n"
QUESTIONS = (["walrus", "value"], ["quokka", "NoneType", "value"], ["walrus", "quokka", "value", "NoneType", "value"])


def _put(store, path: str, text: str, sha: str) -> None:
    store.put_file(path, 0.0, len(text), 0.5 if path.endswith(".md") else 1.0, chunks.language(path) or "",
                   *chunks.cut(path, text), sha=sha)


@pytest.fixture
def stores(tmp_path):
    base = SqliteStore(str(tmp_path / "base.sqlite"), tokens.expand)
    for path, text in TEXTS.items():
        _put(base, path, text, "sha-" + path)
    base.set_meta("built", "now")
    over = OverlayStore(str(tmp_path / "over.sqlite"), str(tmp_path / "base.sqlite"), tokens.expand)
    for path in TEXTS:  # two files the worktree edited (its own rows), the rest shared with the base
        if path in ("pkg/m0.py", "pkg/m13.py"):
            _put(over, path, TEXTS[path] + "\n# walrus value edited\n", "own")
        else:
            over.share(path, 0.0, 1, "sha-" + path)
    try:
        yield base, over
    finally:
        over.close()
        base.close()


def test_a_rescored_candidate_scores_as_the_whole_expression_would(stores):
    for store in stores:
        for words in QUESTIONS:
            find, rest = plan.split(store, words, cap=20)
            assert find and rest, words  # the common words rescore, the rare ones retrieve
            assert {w.lower() for w in find} <= {"walrus", "quokka"}
            whole = {h.rowid: h.score for h in store.chunks(tokens.fts_query(words), 10_000)}
            for glob, limit in ((None, 500), (None, 3), ("pkg/*", 500)):
                got = store.chunks(tokens.fts_query(find), limit, glob, None, plan.groups(rest))
                assert got, (words, glob)
                for h in got:
                    assert h.score == pytest.approx(whole[h.rowid], rel=1e-9), (words, h.path, h.start)
                assert [h.score for h in got] == sorted((h.score for h in got), reverse=True)
            # Every candidate asked for: the rows the rare words match, each with its whole score.
            every = store.chunks(tokens.fts_query(find), 10_000, None, None, plan.groups(rest))
            assert {h.rowid for h in every} == {r for _, r in store.matching(tokens.fts_query(find))}


def test_the_rarest_words_retrieve_and_a_small_query_is_left_whole(stores):
    base, _ = stores
    words = ["value", "walrus", "Value", "NoneType", "quokka"]
    find, rest = plan.split(base, words, cap=20)
    assert find == ["walrus", "quokka"] and rest == ["value", "Value", "NoneType"]  # repeats kept: they score twice
    assert plan.split(base, words, cap=10**6) == (words, [])  # all fit: the expression as written
    assert plan.split(base, ["value"], cap=1) == (["value"], [])  # one word retrieves, however common
    assert plan.split(base, ["value", "NoneType"], cap=1)[0] == ["NoneType"]  # the rarer, past the cap
    assert plan.groups(["NoneType", "walrus"]) == (("nonetype",), ("none", "type"), ("walrus",))


def test_a_plain_words_pool_rescored_keeps_its_stems_scores(stores):
    """concept.search's pool: each word whole or as its stem's prefix (`"valu"*` for values); the
    stems the common words add score in the candidates as FTS5 scores the prefix phrase."""
    for store in stores:
        words = ["walrus", "values", "checks", "NoneType"]
        find, rest = ["walrus"], ["values", "checks", "NoneType"]
        assert {g for g in plan.groups(rest, concept.stem)} >= {("valu*",), ("check*",)}
        whole = {h.rowid: h.score for h in store.chunks(concept.match(words), 10_000)}
        got = store.chunks(concept.match(find), 500, None, None, plan.groups(rest, concept.stem))
        assert len(got) == len(store.matching(concept.match(find)))
        for h in got:
            assert h.score == pytest.approx(whole[h.rowid], rel=1e-9), (h.path, h.start)


def test_a_worktrees_own_row_with_one_part_of_a_compound_word_scores_as_in_the_base(stores):
    """`type(value)` holds `type` and not `none`: FTS5 counts neither part of NoneType there (they are
    an AND), and the overlay's own copy of the chunk (bm25.py) must not count `type` either."""
    base, over = stores
    match = tokens.fts_query(["walrus", "NoneType"])
    for store in (base, over):
        row = [h for h in store.chunks(match, 500) if h.path == "pkg/m0.py" and h.symbol == "walrus_value_feeder"]
        assert row and row[0].score == pytest.approx(
            [h.score for h in store.chunks(tokens.fts_query(["walrus"]), 500) if h.rowid == row[0].rowid][0], rel=1e-9)
    assert all(h.rowid < 0 for h in over.chunks(match, 500) if h.path == "pkg/m0.py")  # its own rows, scored by bm25.py


def _segments(store, table: str = "chunks") -> int:
    return store._db.execute(f"SELECT count(DISTINCT segid) FROM main.{table}_idx").fetchone()[0]


def test_a_built_index_is_merged_into_one_segment_and_answers_the_same(tmp_path):
    """A build writes in batches, each a segment FTS5 looks every query word up in: compact() merges
    them in short steps (runner/system/search/store.py), and every score stays what it was."""
    store = SqliteStore(str(tmp_path / "index.sqlite"), tokens.expand)
    try:
        paths = list(TEXTS)
        for i in range(0, len(paths), 5):  # as the index's build does: a transaction per batch
            with store.batch() as s:
                for path in paths[i:i + 5]:
                    _put(s, path, TEXTS[path], "sha")
        assert _segments(store) > 1
        asked = [tokens.fts_query(w) for w in QUESTIONS] + [concept.match(["values", "checks"])]
        before = [[(h.rowid, h.score) for h in store.chunks(m, 500)] for m in asked]
        defs = [[(d.path, d.line, d.score) for d in store.defs(m, 500)] for m in asked]
        steps = 0
        while store.compact():
            steps += 1
            assert steps < 1000
        assert _segments(store) == 1 and _segments(store, "defs") == 1
        assert [[(h.rowid, h.score) for h in store.chunks(m, 500)] for m in asked] == before
        assert [[(d.path, d.line, d.score) for d in store.defs(m, 500)] for m in asked] == defs
        assert not store.compact()  # nothing left: a query's next lookups probe one segment
    finally:
        store.close()
