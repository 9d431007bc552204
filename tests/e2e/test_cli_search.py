"""`plugkit search` end to end: a real git repository built here with known commits, the real
CLI and an auto-started runner, the index persisted under $PLUGKIT_HOME."""

import json
import os
import time

import pytest

from tests.support.load import stretched
from tests.support.runner_home import rpc
from tests.support.search_repo import answer, commit, git, repo, search  # noqa: F401  (repo: the fixture)

pytestmark = pytest.mark.e2e


def test_definitions_rank_over_mentions_and_tests_below_source(home, repo):
    a = answer(home, repo, "load_config")
    assert a["indexing"] is None
    assert a["definitions"][0] == {"name": "load_config", "path": "src/loader.py", "line": 4, "kind": "def"}
    hits = [h["path"] for h in a["hits"]]
    assert hits[0] == "src/loader.py" and hits.index("src/app.py") < hits.index("tests/test_loader.py")
    assert not {"secret/hidden.py", "logo.bin", "data/dump.txt"} & set(hits)  # .gitignore, binaries, huge files
    first = a["hits"][0]["lines"]
    # The best hit is shown whole (its definition, lines 4-7), not three lines of it.
    assert [ln["line"] for ln in first] == [4, 5, 6, 7] and first[0]["text"] == "def load_config(path):"
    # Identifier parts match too: a camel/snake split query finds the same definition.
    assert answer(home, repo, "load config")["definitions"][0]["path"] == "src/loader.py"
    assert answer(home, repo, "RetryPolicy", "--path", "src/*")["definitions"][0]["name"] == "RetryPolicy"
    assert answer(home, repo, "load_config", "--lang", "markdown")["hits"] == []


def test_text_answer_has_its_sections_and_is_bounded(home, repo):
    out = search(home, repo, "load_config").stdout
    assert out.startswith("definitions:\n  load_config -> src/loader.py:4 (def)")
    assert "code:\n  src/loader.py:4" in out
    for i in range(60):  # enough matches to overflow the default answer
        (repo / f"src/gen_{i}.py").write_text("".join(f"def load_config_{i}_{j}(): pass\n" for j in range(40)))
    big = search(home, repo, "load_config", "--limit", "100").stdout
    assert len(big.encode()) <= 4096 + 200 and "... more: plugkit search" in big


def test_a_saved_file_is_searchable_at_the_next_query(home, repo):
    assert answer(home, repo, "frobnicate_widgets")["definitions"] == []
    (repo / "src/widgets.py").write_text("def frobnicate_widgets():\n    return 1\n")
    started = time.monotonic()
    a = answer(home, repo, "frobnicate_widgets")
    assert a["definitions"][0]["path"] == "src/widgets.py" and time.monotonic() - started < stretched(5)
    (repo / "src/widgets.py").unlink()
    assert answer(home, repo, "frobnicate_widgets")["definitions"] == []


def test_history_questions_find_the_commit(home, repo):
    head = git(repo, "rev-parse", "HEAD")
    a = answer(home, repo, "why", "do", "uploads", "retry")
    assert a["commits"][0]["hash"] == head and a["commits"][0]["paths"] == ["src/retry.py"]
    assert "commits:\n  " + head[:10] in search(home, repo, "why do uploads retry").stdout
    # A new commit is indexed at the next query, from the last indexed HEAD on.
    new = commit(repo, {"src/cache.py": "X = 1\n"}, "Drop the stale thumbnail cache")
    assert answer(home, repo, "thumbnail", "--history")["commits"][0]["hash"] == new


def test_the_index_survives_a_runner_restart_without_a_rebuild(home, repo):
    answer(home, repo, "load_config")
    before = rpc(home, "search.status")["workspaces"]
    assert [w["root"] for w in before] == [os.path.realpath(repo)] and before[0]["built"]
    assert home.cli("runner", "stop").returncode == 0
    store = [f for f in os.listdir(os.path.join(home.path, "search")) if f.endswith(".sqlite")]
    assert len(store) == 1
    time.sleep(1.1)  # a rebuild would stamp a later second
    assert answer(home, repo, "RetryPolicy")["definitions"][0]["path"] == "src/retry.py"
    after = rpc(home, "search.status")["workspaces"][0]
    assert after["built"] == before[0]["built"] and after["head"] == before[0]["head"]
    assert "built" in search(home, repo, "--status").stdout
    assert f"search {os.path.realpath(repo)}: " in home.cli("runner", "status").stdout


def test_bad_calls_are_refused_with_the_next_step(home, repo):
    done = home.cli("search", cwd=repo)
    assert done.returncode == 2 and "plugkit search QUERY" in done.stderr
    bad = home.cli("search", "x", "--limit", "many", cwd=repo)
    assert bad.returncode == 2 and "--limit" in bad.stderr
    root = home.cli("search", "x", cwd="/")
    assert root.returncode == 2 and "filesystem root" in root.stderr and "--cwd DIR" in root.stderr
    assert root.stderr.count("\n") <= 2


def test_digest_reads_the_manifests_and_is_cached_until_they_change(home, repo):
    (repo / "pyproject.toml").write_text('[project]\nname = "proj"\n[project.scripts]\nproj = "src.app:main"\n'
                                         '[project.optional-dependencies]\ntest = ["pytest"]\n')
    (repo / "Makefile").write_text(".PHONY: test\ntest:\n\tpytest\nlint:\n\truff .\n")
    for i in range(3):
        commit(repo, {"src/app.py": f"def main():\n    return {i}\n"}, f"tune main {i}")
    first = json.loads(home.cli("digest", "--json", cwd=repo).stdout)
    text = first["text"]
    assert not first["cached"] and len(text) <= 3600
    assert "python: " in text and "proj = src.app:main (pyproject scripts)" in text
    assert "make test | lint" in text and "pytest" in text
    assert "src/ (" in text and "src/app.py (4 commits)" in text
    assert json.loads(home.cli("digest", "--json", cwd=repo).stdout)["cached"] is True
    (repo / "Makefile").write_text("build:\n\tcc x.c\n")
    again = json.loads(home.cli("digest", "--json", cwd=repo).stdout)
    assert not again["cached"] and "make build" in again["text"]
