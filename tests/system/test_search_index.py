"""The index on real files, in process: one build however many first queries race, a reopened
index is not rebuilt, partial answers say how far the build is."""

import threading

from runner.core.search import index as index_mod
from runner.core.search.manager import SearchManager


def _tree(root, n: int) -> None:
    for i in range(n):
        (root / f"m{i}.py").write_text(f"def handler_{i}():\n    return {i}\n")


def test_racing_first_queries_start_one_build(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    _tree(ws, 60)
    starts = []
    real_start = index_mod.WorkspaceIndex._start
    monkeypatch.setattr(index_mod.WorkspaceIndex, "_start", lambda self: (starts.append(1), real_start(self)))
    manager = SearchManager(str(tmp_path / "home"), semantic_layer=False)
    try:
        threads = [threading.Thread(target=manager.query, args=(str(ws), "handler_7")) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        manager.workspace(str(ws)).wait(30)
        assert len(starts) == 1
        assert manager.query(str(ws), "handler_7").definitions[0].path == "m7.py"
    finally:
        manager.close()


def test_a_reopened_index_is_not_rebuilt_and_a_partial_answer_says_so(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    _tree(ws, 80)
    home = str(tmp_path / "home")
    first = SearchManager(home, semantic_layer=False)
    monkeypatch.setattr("runner.core.search.manager.FIRST_WAIT_S", 0.0)
    monkeypatch.setattr(index_mod, "BATCH", 1)
    try:
        partial = first.query(str(ws), "handler_3")
        assert partial.indexing is not None  # answered at once, while the build runs
        first.workspace(str(ws)).wait(30)
        built = first.workspace(str(ws)).store.get_meta("built")
    finally:
        first.close()
    second = SearchManager(home, semantic_layer=False)
    try:
        a = second.query(str(ws), "handler_3")
        assert a.indexing is None and a.definitions[0].path == "m3.py"
        assert second.workspace(str(ws)).store.get_meta("built") == built
    finally:
        second.close()


def _inotify_fds() -> int:
    import os

    return sum(os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify" for fd in os.listdir("/proc/self/fd")
               if os.path.exists(f"/proc/self/fd/{fd}"))


def _found(manager, ws, word: str) -> list[str]:
    a = manager.query(str(ws), word)
    return sorted({d.path for d in a.definitions} | {h.path for h in a.hits})


def test_every_change_between_two_queries_is_seen_by_the_second_without_a_stat_of_every_file(tmp_path, monkeypatch):
    """The watch replaces the per-query stat of every file: an in-place edit (no directory mtime
    moves), a file in a new directory, a delete, a rename and a file replaced by a link to a file
    outside (never followed) are each answered at the very next query; one index, one watch."""
    import os
    import subprocess
    import sys

    ws = tmp_path / "ws"
    ws.mkdir()
    _tree(ws, 60)
    (tmp_path / "secret.py").write_text("def outside_secret_word():\n    pass\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    fds = _inotify_fds()
    manager = SearchManager(str(tmp_path / "home"), semantic_layer=False)
    try:
        manager.query(str(ws), "handler_1")
        manager.workspace(str(ws)).wait(30)
        manager.query(str(ws), "handler_1")
        assert _inotify_fds() == fds + 1  # one watch for the workspace
        stats = []
        real_lstat = os.lstat

        def counted(path, *args, **kwargs):  # the index's own stats, not a snippet's confined read
            if sys._getframe(1).f_code.co_filename == index_mod.__file__:
                stats.append(path)
            return real_lstat(path, *args, **kwargs)

        monkeypatch.setattr(os, "lstat", counted)
        assert _found(manager, ws, "handler_2") == ["m2.py"]
        assert len(stats) < 5, stats  # nothing changed: no file stat'ed
        with open(ws / "m3.py", "r+") as f:  # in place: the directory's mtime stays
            f.write("def edited_in_place_3():  ")
        assert _found(manager, ws, "edited_in_place_3") == ["m3.py"]
        (ws / "pkg" / "deep").mkdir(parents=True)
        (ws / "pkg" / "deep" / "new_mod.py").write_text("def in_a_new_directory():\n    pass\n")
        assert _found(manager, ws, "in_a_new_directory") == ["pkg/deep/new_mod.py"]
        (ws / "pkg" / "deep" / "later.py").write_text("def later_in_that_directory():\n    pass\n")
        assert _found(manager, ws, "later_in_that_directory") == ["pkg/deep/later.py"]
        (ws / "m4.py").unlink()
        assert _found(manager, ws, "handler_4") == []
        (ws / "m5.py").rename(ws / "renamed_5.py")
        assert _found(manager, ws, "handler_5") == ["renamed_5.py"]
        (ws / "m6.py").unlink()
        (ws / "m6.py").symlink_to(tmp_path / "secret.py")
        assert _found(manager, ws, "handler_6") == []
        assert _found(manager, ws, "outside_secret_word") == []
        stats.clear()
        assert _found(manager, ws, "handler_7") == ["m7.py"]
        assert len(stats) < 5, stats  # the watch survived the new directory: still no stat of every file
    finally:
        manager.close()
    assert _inotify_fds() == fds  # the watch ended with its index


def test_without_a_watch_every_change_is_still_seen(tmp_path, monkeypatch):
    """No inotify to be had (another OS, out of instances, a tree too large): every file is stat'ed."""
    from runner.system import dirwatch

    monkeypatch.setattr(dirwatch, "watch", lambda root, skip: None)
    ws = tmp_path / "ws"
    ws.mkdir()
    _tree(ws, 10)
    manager = SearchManager(str(tmp_path / "home"), semantic_layer=False)
    try:
        manager.query(str(ws), "handler_1")
        manager.workspace(str(ws)).wait(30)
        with open(ws / "m3.py", "r+") as f:
            f.write("def edited_in_place_3():  ")
        assert _found(manager, ws, "edited_in_place_3") == ["m3.py"]
        (ws / "sub").mkdir()
        (ws / "sub" / "n.py").write_text("def in_a_new_directory():\n    pass\n")
        assert _found(manager, ws, "in_a_new_directory") == ["sub/n.py"]
        (ws / "m4.py").unlink()
        assert _found(manager, ws, "handler_4") == []
    finally:
        manager.close()


def test_a_lost_watch_says_so_and_the_index_stats_every_file_once():
    """A queue overflow, a directory made or a watch gone cannot be followed file by file."""
    from runner.system import dirwatch

    w = dirwatch.DirWatch.__new__(dirwatch.DirWatch)
    w._dirs, w._skip = {1: "", 2: "pkg"}, frozenset({".git", "__pycache__"})
    assert w.follow([(1, dirwatch.IN_MODIFY, "a.py"), (2, dirwatch.IN_MOVED_TO, "b.py")]) == {"a.py", "pkg/b.py"}
    assert w.follow([(-1, dirwatch.IN_Q_OVERFLOW, "")]) is None
    assert w.follow([(1, dirwatch.IN_CREATE | dirwatch.IN_ISDIR, "new")]) is None
    assert w.follow([(1, dirwatch.IN_CREATE | dirwatch.IN_ISDIR, "__pycache__")]) == set()
    assert w.follow([(2, dirwatch.IN_IGNORED, "")]) is None
    assert dirwatch.parse(dirwatch._HEADER.pack(3, dirwatch.IN_DELETE, 0, 8) + b"x.py\0\0\0\0") == [(3, 0x200, "x.py")]


def test_a_watched_workspace_lists_itself_again_only_when_its_tree_says_so(tmp_path, monkeypatch):
    """With a watch, git ls-files runs for a file made where none was listed or a .gitignore
    written, not on a clock every query seconds apart pays; an ignored file written again and again
    lists once; an editor's temporary file gone by the query lists never."""
    import subprocess

    ws = tmp_path / "ws"
    ws.mkdir()
    _tree(ws, 5)
    (ws / ".gitignore").write_text("*.log\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    lists = []
    real = index_mod.files.list_files
    monkeypatch.setattr(index_mod.files, "list_files", lambda root: (lists.append(root), real(root))[1])
    monkeypatch.setattr(index_mod, "RELIST_S", 1e-9)  # the clock of a workspace without a watch: every query
    manager = SearchManager(str(tmp_path / "home"), semantic_layer=False)
    try:
        manager.query(str(ws), "handler_1")
        manager.workspace(str(ws)).wait(30)
        manager.query(str(ws), "handler_1")
        lists.clear()
        for i in range(3):
            (ws / "run.log").write_text(f"line {i}\n")  # ignored, written between every two queries
            (ws / ".m1.py.swp").write_text("x")
            (ws / ".m1.py.swp").unlink()
            assert _found(manager, ws, "handler_1") == ["m1.py"]
        assert len(lists) == 1
        (ws / ".gitignore").write_text("*.log\nm2.py\n")
        assert _found(manager, ws, "handler_2") == []
        (ws / "fresh.py").write_text("def fresh_one():\n    pass\n")
        assert _found(manager, ws, "fresh_one") == ["fresh.py"]
        assert len(lists) == 3
    finally:
        manager.close()


def test_a_finished_build_merges_its_segments_while_saved_files_are_still_indexed(tmp_path):
    """The build's batches leave a segment each; the index merges them in its own job once built
    (runner/system/search/store.py compact), and a file saved meanwhile is searchable at the next query."""
    ws = tmp_path / "ws"
    ws.mkdir()
    _tree(ws, 4 * index_mod.BATCH + 3)
    manager = SearchManager(str(tmp_path / "home"), semantic_layer=False)
    try:
        manager.query(str(ws), "handler_7")
        index = manager.workspace(str(ws))
        index.wait(60)
        (ws / "saved.py").write_text("def freshly_saved_walrus():\n    pass\n")
        assert [d.path for d in manager.query(str(ws), "freshly_saved_walrus").definitions] == ["saved.py"]
        index._compactor.join(60)
        assert not index._compactor.alive()
        store = index.store
        with store.lock:
            segments = store._db.execute("SELECT count(DISTINCT segid) FROM chunks_idx").fetchone()[0]
        assert segments <= 2  # the build's one, and the saved file's own if it came after the merge
        assert [d.path for d in manager.query(str(ws), "handler_7").definitions] == ["m7.py"]
    finally:
        manager.close()


def test_head_moving_any_way_is_seen_by_the_next_query_and_a_still_head_runs_no_git(tmp_path, monkeypatch):
    """HEAD's own files say whether it moved (history.head_files): a commit, an amend, a reset, a
    checkout, an update-ref, in the repository and in a linked worktree, each seen at the next query
    with the clock's re-check out of the way; queries while HEAD stands still run no git."""
    from runner.core.search import history
    from tests.support.search_repo import commit, git

    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, {"a.py": "def first():\n    pass\n"}, "Start the quokka ledger")
    monkeypatch.setattr(index_mod, "HEAD_RECHECK_S", 1e9)
    asked = []
    real = history.head
    monkeypatch.setattr(index_mod.history, "head", lambda root: (asked.append(root), real(root))[1])
    manager = SearchManager(str(tmp_path / "home"), semantic_layer=False)

    def subjects(where) -> set[str]:
        return {c.subject for c in manager.query(str(where), "quokka", history=True).commits}

    try:
        manager.query(str(repo), "first")
        manager.workspace(str(repo)).wait(30)
        assert subjects(repo) == {"Start the quokka ledger"}
        asked.clear()
        for _ in range(3):
            assert subjects(repo) == {"Start the quokka ledger"}
        assert asked == []  # HEAD stood still: no git spawned
        commit(repo, {"b.py": "x = 1\n"}, "Feed the quokka")
        assert subjects(repo) == {"Start the quokka ledger", "Feed the quokka"}
        git(repo, "commit", "-q", "--amend", "-m", "Water the quokka")
        assert subjects(repo) == {"Start the quokka ledger", "Water the quokka"}
        first = git(repo, "rev-list", "--max-parents=0", "HEAD")
        git(repo, "reset", "-q", "--hard", first)
        assert subjects(repo) == {"Start the quokka ledger"}
        git(repo, "checkout", "-q", "-b", "side")
        commit(repo, {"c.py": "y = 2\n"}, "Brush the quokka")
        git(repo, "checkout", "-q", "main")
        assert subjects(repo) == {"Start the quokka ledger"}
        git(repo, "update-ref", "refs/heads/main", git(repo, "rev-parse", "side"))
        assert subjects(repo) == {"Start the quokka ledger", "Brush the quokka"}
        tree = tmp_path / "tree"
        git(repo, "worktree", "add", "-q", "-b", "feature", str(tree))
        assert subjects(tree) == {"Start the quokka ledger", "Brush the quokka"}
        commit(tree, {"d.py": "z = 3\n"}, "Weigh the quokka")
        assert subjects(tree) == {"Start the quokka ledger", "Brush the quokka", "Weigh the quokka"}
        assert subjects(repo) == {"Start the quokka ledger", "Brush the quokka"}
    finally:
        manager.close()
