"""One index per repository, shared by its worktrees, through the real CLI and an auto-started
runner: `plugkit work`'s worktree and a person's `git worktree add` each answer `plugkit search`
with their own edits and deletions, the main checkout with its own, from one base index plus a
small overlay each (runner/system/search/overlay.py; the row counts: tests/system/
test_search_worktree_overlay.py)."""

import pytest

from tests.support.search_repo import answer, commit, git

pytestmark = pytest.mark.e2e


def _paths(a: dict) -> set[str]:
    return {d["path"] for d in a["definitions"]} | {h["path"] for h in a["hits"]}


def test_each_worktree_answers_from_its_own_bytes_and_the_main_checkout_from_its_own(home, tmp_path):
    main = tmp_path / "proj"
    main.mkdir()
    git(main, "init", "-q")
    commit(main, {f"src/m{i}.py": f"def handler_{i}(request):\n    return respond({i})\n" for i in range(40)},
           "handlers")
    worker = main / ".plugkit" / "worktrees" / "3"
    person = tmp_path / "person-tree"
    git(main, "worktree", "add", "-q", "-b", "worker", str(worker))
    git(main, "worktree", "add", "-q", "-b", "person", str(person))
    assert "src/m5.py" in _paths(answer(home, main, "handler_5"))  # the repository's index, built
    (worker / "src" / "m5.py").write_text("def handler_5(request):\n    return 'aardvark_worker'\n")
    (person / "src" / "m5.py").write_text("def handler_5(request):\n    return 'pangolin_person'\n")
    (person / "src" / "m7.py").unlink()

    first = answer(home, worker, "aardvark_worker")
    assert first["indexing"] is None and _paths(first) == {"src/m5.py"}, first
    assert _paths(answer(home, person, "pangolin_person")) == {"src/m5.py"}
    for tree, other in ((worker, "pangolin_person"), (person, "aardvark_worker"), (main, "aardvark_worker"),
                        (main, "pangolin_person")):
        assert not _paths(answer(home, tree, other)), (tree, other)
    assert "src/m7.py" not in _paths(answer(home, person, "handler_7"))  # deleted there
    assert "src/m7.py" in _paths(answer(home, worker, "handler_7"))
    # The base's version: in the main checkout only (every file says respond; all of them asked for).
    assert "src/m5.py" in _paths(answer(home, main, "respond", "--limit", "60"))
    assert "src/m5.py" not in _paths(answer(home, worker, "respond", "--limit", "60"))
    assert "src/m6.py" in _paths(answer(home, worker, "respond", "--limit", "60"))
