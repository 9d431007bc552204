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
