"""A linked worktree answers from its repository's index plus an overlay of its own
(runner/system/search/overlay.py): real git worktrees, real SQLite, the index's real threads.

Each worktree gets its own truth (its edit, its deletion, its new file) while the main checkout and
the other worktrees keep theirs; the overlay holds only what differs, and a worktree's first query
cuts only the differing files into chunks, not the repository."""

import os
import sqlite3

import pytest

from runner.core.search import chunks
from runner.core.search.manager import SearchManager
from tests.support.search_repo import commit, git

FILES = 120


def _paths(answer) -> set[str]:
    return {d.path for d in answer.definitions} | {h.path for h in answer.hits}


@pytest.fixture
def repo(tmp_path):
    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q")
    commit(main, {f"pkg/m{i}.py": f"def handler_{i}(request):\n    return respond({i})\n" for i in range(FILES)}
           | {"pkg/shared.py": "def shared_helper():\n    return 'unchanged_everywhere'\n"}, "handlers")
    return main


@pytest.fixture
def manager(tmp_path):
    made = SearchManager(str(tmp_path / "home"), semantic_layer=False)
    yield made
    made.close()


def _cut(monkeypatch) -> list[str]:
    """The files the index cut into chunks (chunks.cut is the expensive step a shared file skips)."""
    seen: list[str] = []
    real = chunks.cut
    monkeypatch.setattr(chunks, "cut", lambda rel, text: (seen.append(rel), real(rel, text))[1])
    return seen


def _ready(manager, root) -> None:
    manager.query(str(root), "handler_0")
    manager.workspace(str(root)).wait(60)


def test_two_worktrees_and_the_main_checkout_each_answer_from_their_own_bytes(repo, tmp_path, manager, monkeypatch):
    # A worktree where `plugkit work` puts its workers', and a person's elsewhere.
    one = repo / ".plugkit" / "worktrees" / "7"
    two = tmp_path / "elsewhere"
    git(repo, "worktree", "add", "-q", "-b", "one", str(one))
    git(repo, "worktree", "add", "-q", "-b", "two", str(two))
    _ready(manager, repo)
    cut = _cut(monkeypatch)
    (one / "pkg" / "m5.py").write_text("def handler_5(request):\n    return 'aardvark_version'\n")
    (two / "pkg" / "m5.py").write_text("def handler_5(request):\n    return 'pangolin_version'\n")
    (two / "pkg" / "m9.py").unlink()
    (two / "pkg" / "fresh.py").write_text("def brand_new_walrus():\n    pass\n")
    (one / "pkg" / "m11.py").unlink()
    os.symlink(repo / "pkg" / "m12.py", one / "pkg" / "m11.py")  # a planted link: never read, never the base's

    first = manager.query(str(one), "handler_7")
    assert first.indexing is None and "pkg/m7.py" in _paths(first), first  # complete at its first query
    assert sorted(cut) == ["pkg/m5.py"], cut  # only the edit was cut into chunks: the rest is the base's
    manager.query(str(two), "handler_7")
    assert sorted(cut) == ["pkg/fresh.py", "pkg/m5.py", "pkg/m5.py"], cut

    # Each worktree's own edit answers there and nowhere else.
    assert _paths(manager.query(str(one), "aardvark_version")) == {"pkg/m5.py"}
    assert not _paths(manager.query(str(two), "aardvark_version"))
    assert _paths(manager.query(str(two), "pangolin_version")) == {"pkg/m5.py"}
    assert not _paths(manager.query(str(one), "pangolin_version"))
    assert not _paths(manager.query(str(repo), "aardvark_version")) | _paths(manager.query(str(repo), "pangolin_version"))
    # The base's version of an edited file never answers in the worktree that edited it.
    every = _paths(manager.query(str(one), "respond", limit=FILES * 2))  # every file but the edit says respond
    assert "pkg/m5.py" not in every and "pkg/m6.py" in every
    assert "pkg/m5.py" in _paths(manager.query(str(repo), "handler_5"))
    # A deleted file (and one replaced by a link) never answers from the base.
    assert "pkg/m9.py" not in _paths(manager.query(str(two), "handler_9"))
    assert "pkg/m11.py" not in _paths(manager.query(str(one), "handler_11"))
    assert "pkg/m9.py" in _paths(manager.query(str(one), "handler_9"))  # the other worktree still has it
    assert _paths(manager.query(str(two), "brand_new_walrus")) == {"pkg/fresh.py"}
    assert not _paths(manager.query(str(one), "brand_new_walrus"))
    assert not _paths(manager.query(str(repo), "brand_new_walrus"))

    # The overlays are small: the differing files' rows, not the repository's.
    rows_one = manager.workspace(str(one)).store.overlay_rows()
    rows_two = manager.workspace(str(two)).store.overlay_rows()
    assert rows_one["files"] == 1 and rows_one["chunks"] == len(chunks.cut("m5.py", (one / "pkg/m5.py").read_text())[0])
    assert rows_one["shared"] == FILES + 1 - 2  # all but the edit and the link
    assert rows_two["files"] == 2 and rows_two["shared"] == FILES + 1 - 2  # the edit and the new file; m9 gone


def test_a_later_edit_in_the_worktree_or_the_main_checkout_moves_only_that_file(repo, tmp_path, manager, monkeypatch):
    tree = tmp_path / "tree"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tree))
    _ready(manager, repo)
    _ready(manager, tree)
    cut = _cut(monkeypatch)
    (tree / "pkg" / "m3.py").write_text("def handler_3(request):\n    return 'okapi_edit'\n")
    assert _paths(manager.query(str(tree), "okapi_edit")) == {"pkg/m3.py"}
    (tree / "pkg" / "m3.py").unlink()
    assert not _paths(manager.query(str(tree), "okapi_edit")) and "pkg/m3.py" not in _paths(
        manager.query(str(tree), "handler_3"))
    # The person edits the main checkout: the worktree, which still has the old bytes, never
    # answers with the person's new ones, and keeps its own old version searchable.
    (repo / "pkg" / "m4.py").write_text("def handler_4(request):\n    return 'zebra_person_edit'\n")
    assert _paths(manager.query(str(repo), "zebra_person_edit")) == {"pkg/m4.py"}
    assert not _paths(manager.query(str(tree), "zebra_person_edit"))
    assert "pkg/m4.py" in _paths(manager.query(str(tree), "handler_4"))
    assert sorted(cut) == ["pkg/m3.py", "pkg/m4.py", "pkg/m4.py"], cut  # the edit; m4 in main, then in tree


def test_nothing_done_for_a_worktree_writes_the_base_index(repo, tmp_path, manager):
    tree = tmp_path / "tree"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tree))
    _ready(manager, repo)
    store = manager.workspace(str(tree)).store
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        with store.batch() as s:
            s._db.execute("DELETE FROM base.files")  # the base is attached read only
    assert "pkg/m1.py" in _paths(manager.query(str(repo), "handler_1"))


def test_a_worktree_answers_why_with_the_commits_its_head_reaches(repo, tmp_path, manager):
    tree = tmp_path / "tree"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tree))
    commit(repo, {"pkg/late.py": "X = 1\n"}, "Retune the quokka scheduler on main")
    commit(tree, {"pkg/own.py": "Y = 2\n"}, "Teach the quokka scheduler to wait")
    _ready(manager, repo)

    def subjects(root) -> set[str]:
        return {c.subject for c in manager.query(str(root), "why did the quokka scheduler change").commits}

    assert subjects(repo) == {"Retune the quokka scheduler on main"}
    assert subjects(tree) == {"Teach the quokka scheduler to wait"}  # main's later commit is not its history
    rows = manager.workspace(str(tree)).store.overlay_rows()
    assert rows["commits"] == 1 and rows["hidden"] == 1, rows  # its own commit; main's it does not reach


def test_an_overlay_row_scores_as_the_same_row_would_in_the_base(tmp_path):
    """The overlay's few rows are scored with the base's statistics (runner/system/search/bm25.py):
    a file the worktree edited ranks as it would in the base, not by a corpus of one file's idf."""
    from runner.core.search import tokens
    from runner.system.search.overlay import OverlayStore
    from runner.system.search.store import SqliteStore

    texts = {f"m{i}.py": f"def handler_{i}(x):\n    return parse_args(x) + {i}\n" for i in range(60)}
    texts["odd.py"] = "def walrus_feeder():\n    '''Feed the walrus, then the other walrus.'''\n    return 'walrus'\n"
    base = SqliteStore(str(tmp_path / "base.sqlite"), tokens.expand)
    for path, text in texts.items():
        base.put_file(path, 0.0, len(text), 1.0, "python", *chunks.cut(path, text), sha="sha-" + path)
    base.set_meta("built", "now")
    over = OverlayStore(str(tmp_path / "over.sqlite"), str(tmp_path / "base.sqlite"), tokens.expand)
    try:
        for path in texts:  # the same bytes, but odd.py and m3.py indexed in the overlay itself
            if path in ("odd.py", "m3.py"):
                over.put_file(path, 0.0, 1, 1.0, "python", *chunks.cut(path, texts[path]), sha="own")
            else:
                over.share(path, 0.0, 1, "sha-" + path)
        for words in (["walrus", "handler_3"], ["parse_args"], ["feed", "x"]):
            match = tokens.fts_query(words)  # all rows asked for: equal scores tie in any order
            assert sorted((round(h.score, 9), h.path, h.start) for h in over.chunks(match, 500)) == \
                sorted((round(h.score, 9), h.path, h.start) for h in base.chunks(match, 500)), words
            assert sorted((round(d.score, 9), d.path, d.name) for d in over.defs(match, 500)) == \
                sorted((round(d.score, 9), d.path, d.name) for d in base.defs(match, 500)), words
        assert over.chunks(tokens.fts_query(["walrus"]), 1)[0].path == "odd.py"
        assert over.overlay_rows()["files"] == 2 and over.file_count() == len(texts)
    finally:
        over.close()
        base.close()


def test_chunks_ranked_by_rowid_first_answer_as_the_whole_rows_join_would(tmp_path):
    """store.chunks ranks by rowid and score, then reads the chosen rows' columns (issue 46: reading
    path and start past every matching row's body was most of a plain-words question): the same
    hits in the same order as the plain join, ties and filters included, in a repository and a worktree."""
    from runner.core.search import tokens
    from runner.system.search.overlay import OverlayStore
    from runner.system.search.store import SqliteStore

    texts = {f"pkg/m{i}.py": f"def handler_{i % 7}(x):\n    return parse_args(x) + {i % 3}\n" for i in range(40)}
    texts.update({f"docs/n{i}.md": "parse the args, then handler it\n" for i in range(5)})  # equal scores
    base = SqliteStore(str(tmp_path / "base.sqlite"), tokens.expand)
    for path, text in texts.items():
        base.put_file(path, 0.0, len(text), 0.5 if path.endswith(".md") else 1.0, chunks.language(path) or "",
                      *chunks.cut(path, text), sha="sha-" + path)
    base.set_meta("built", "now")
    over = OverlayStore(str(tmp_path / "over.sqlite"), str(tmp_path / "base.sqlite"), tokens.expand)
    try:
        for path in texts:
            over.share(path, 0.0, 1, "sha-" + path)
        for words in (["parse_args"], ["handler_3", "parse"], ["args", "handler"]):
            match = tokens.fts_query(words)
            for glob, lang, limit in ((None, None, 7), (None, None, 500), ("pkg/*", None, 5), (None, "python", 9)):
                sql = ("SELECT c.path, c.start, c.end, -bm25(chunks, 4.0, 1.0) * f.factor AS s FROM chunks c JOIN "
                       "files f ON f.path = c.path WHERE chunks MATCH ?" + (" AND f.path GLOB ?" if glob else "")
                       + (" AND f.lang = ?" if lang else "") + " ORDER BY s DESC LIMIT ?")
                want = [(p, a, b, round(s, 9)) for p, a, b, s in base._db.execute(
                    sql, [match] + [x for x in (glob, lang) if x] + [limit])]
                assert want, (words, glob, lang)
                for store in (base, over):
                    got = [(h.path, h.start, h.end, round(h.score, 9)) for h in store.chunks(match, limit, glob, lang)]
                    assert got == want if store is base else sorted(got) == sorted(want), (words, glob, lang, limit)
        # file_count is kept between queries (postings.py asks it per word): a write on either side moves it.
        assert over.file_count() == len(texts)
        base.drop_file("pkg/m1.py")  # the main checkout's index, written on its own connection
        assert over.file_count() == len(texts) - 1
        over.put_file("pkg/own.py", 0.0, 1, 1.0, "python", *chunks.cut("pkg/own.py", "X = 1\n"), sha="own")
        assert over.file_count() == len(texts)
    finally:
        over.close()
        base.close()


def test_matching_names_each_chunk_by_the_rowid_its_hit_carries(tmp_path):
    """store.matching answers (path, rowid) without reading the content table (issue 46), in a
    repository and a worktree (the overlay's own rows negated); a class's own window and its method
    that begin on one line stay two chunks (keyed by (path, start) they shared one score)."""
    from runner.core.search import tokens
    from runner.system.search.overlay import OverlayStore
    from runner.system.search.store import SqliteStore

    # The class's own lines (1, 2 and the last) are cut in 30-line windows from line 1: the windows
    # at 31 and 61 begin where a method does.
    methods = "".join(f"    def method_{i}(self):\n        return compare_tuple({i})\n" for i in range(40))
    texts = {"ver.py": f"class Version:\n    \"\"\"compare_tuple of a version.\"\"\"\n{methods}    last = 1\n",
             **{f"m{i}.py": f"def handler_{i}(x):\n    return compare_tuple(x)\n" for i in range(20)}}
    base = SqliteStore(str(tmp_path / "base.sqlite"), tokens.expand)
    for path, text in texts.items():
        base.put_file(path, 0.0, len(text), 1.0, "python", *chunks.cut(path, text), sha="sha-" + path)
    base.set_meta("built", "now")
    over = OverlayStore(str(tmp_path / "over.sqlite"), str(tmp_path / "base.sqlite"), tokens.expand)
    try:
        for path in texts:
            if path in ("ver.py", "m3.py"):
                over.put_file(path, 0.0, 1, 1.0, "python", *chunks.cut(path, texts[path]), sha="own")
            else:
                over.share(path, 0.0, 1, "sha-" + path)
        match = tokens.fts_query(["compare_tuple"])
        for store in (base, over):
            hits = store.chunks(match, 500)
            assert sorted(store.matching(match)) == sorted((h.path, h.rowid) for h in hits)
            ver = [h for h in hits if h.path == "ver.py"]
            assert len({h.rowid for h in ver}) == len(ver) > len({h.start for h in ver})  # shared first lines
            assert [h.path for h in store.chunks_at([h.rowid for h in hits[:5]])] == [h.path for h in hits[:5]]
        assert all(r < 0 for p, r in over.matching(match) if p in ("ver.py", "m3.py"))
    finally:
        over.close()
        base.close()


def test_every_query_of_the_store_has_a_worktree_version():
    """A query method added to SqliteStore and not to OverlayStore would answer a worktree from its
    overlay alone (the base's files missing): each is listed here or given its overlay version."""
    from runner.system.search.overlay import OverlayStore
    from runner.system.search.store import SqliteStore

    # The overlay's own: the connection, its transactions, and the vectors its filler writes (and
    # clears when the model changed: the base's are its own index's).
    # count's worktree version is its _count_rows (the base's rows and the overlay's), under count's cache;
    # compact merges the overlay's own tables (the base's are its own index's to merge).
    inherited = {"close", "batch", "unembedded", "put_vectors", "clear_vectors", "count", "compact"}
    public = {name for name in vars(SqliteStore) if not name.startswith("_")}
    assert public - set(vars(OverlayStore)) == inherited


def test_a_worktree_asked_first_builds_its_repositorys_index_not_its_own(repo, tmp_path, manager, monkeypatch):
    tree = tmp_path / "tree"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tree))
    (tree / "pkg" / "m2.py").write_text("def handler_2(request):\n    return 'ibex_edit'\n")
    cut = _cut(monkeypatch)
    manager.query(str(tree), "handler_7")  # the main checkout was never searched
    manager.workspace(str(tree)).wait(60)
    assert _paths(manager.query(str(tree), "ibex_edit")) == {"pkg/m2.py"}
    assert "pkg/m7.py" in _paths(manager.query(str(tree), "handler_7"))
    # The repository's index was built once, from the main checkout; the worktree cut only its edit.
    assert manager.workspace(str(repo)).store.get_meta("built") is not None
    assert sorted(cut) == sorted([f"pkg/m{i}.py" for i in range(FILES)] + ["pkg/shared.py", "pkg/m2.py"]), cut
    rows = manager.workspace(str(tree)).store.overlay_rows()
    assert rows["files"] == 1 and rows["shared"] == FILES, rows
    assert "pkg/m2.py" in _paths(manager.query(str(repo), "handler_2")) and len(cut) == FILES + 2  # ready, no rebuild
