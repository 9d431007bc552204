"""A linked worktree's first index is its main checkout's, copied (runner/core/search/seed.py):
only what differs is indexed, and nothing the worktree does not have byte for byte is ever
answered from the copy (the main checkout's uncommitted edit, its untracked file, a link)."""

import subprocess

from runner.core.search import index as index_mod
from runner.core.search.manager import SearchManager


def _git(cwd, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def _paths(answer) -> set[str]:
    return {d.path for d in answer.definitions} | {h.path for h in answer.hits}


def test_a_worktree_starts_from_its_repositorys_index_and_sees_only_its_own_bytes(tmp_path, monkeypatch):
    main = tmp_path / "main"
    main.mkdir()
    for i in range(150):
        (main / f"m{i}.py").write_text(f"def handler_{i}():\n    return {i}\n")
    _git(main, "init", "-q", "-b", "main")
    _git(main, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    _git(main, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "handlers")
    # The person's own, in the main checkout only: an uncommitted edit and an untracked file.
    (main / "m1.py").write_text("def handler_1():\n    return 'zebrapassword'\n")
    (main / "notes.py").write_text("def private_quokka():\n    pass\n")
    tree = tmp_path / "tree"
    _git(main, "worktree", "add", "-q", "-b", "feature", str(tree))
    (tree / "m2.py").write_text("def handler_2_renamed():\n    return 2\n")
    (tree / "fresh.py").write_text("def brand_new_walrus():\n    pass\n")
    (tree / "m3.py").unlink()
    (tree / "m3.py").symlink_to(main / "m1.py")  # a link to what differs: never read through
    indexed = []
    real_index = index_mod.WorkspaceIndex._index
    monkeypatch.setattr(index_mod.WorkspaceIndex, "_index",
                        lambda self, batch: (indexed.extend(rel for rel, *_ in batch), real_index(self, batch)))
    manager = SearchManager(str(tmp_path / "home"), semantic_layer=False)
    try:
        manager.query(str(main), "handler_7")
        manager.workspace(str(main)).wait(60)
        built_main = len(indexed)
        assert built_main >= 150
        indexed.clear()
        a = manager.query(str(tree), "handler_7")
        manager.workspace(str(tree)).wait(60)
        assert a.indexing is None and "m7.py" in _paths(a), a  # complete at the first query
        # Only what the worktree has differently was read: not the repository from scratch.
        assert set(indexed) <= {"m1.py", "m2.py", "fresh.py"} and "fresh.py" in indexed, indexed
        assert manager.workspace(str(tree)).store.get_meta("seeded_from") == str(main.resolve())
        assert "fresh.py" in _paths(manager.query(str(tree), "brand_new_walrus"))
        assert "m2.py" in _paths(manager.query(str(tree), "handler_2_renamed"))
        # Nothing of the main checkout's own bytes, whatever the way in.
        assert not _paths(manager.query(str(tree), "zebrapassword"))
        assert not _paths(manager.query(str(tree), "private_quokka"))
        assert "m3.py" not in _paths(manager.query(str(tree), "handler_3"))
        # The main checkout's own index is untouched by the copy.
        assert "m1.py" in _paths(manager.query(str(main), "zebrapassword"))
    finally:
        manager.close()
