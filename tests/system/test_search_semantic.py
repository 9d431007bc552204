"""The semantic layer with its real model (`plugkit[semantic]`, which scripts/setup installs for
the suite): a query that shares no word with the code finds it through the vectors fused with
BM25, BM25 answers do not wait for the embedding, a saved file is embedded again, and the real
runner and CLI answer the same way unless the operator turned the layer off."""

import json
import subprocess
import time

from runner.core.search import semantic
from runner.core.search.manager import SearchManager

CODE = {
    "net.py": "def fetch_page(url):\n    '''Download a web page over HTTP and return its body.'''\n"
              "    return urlopen(url).read()\n",
    "money.py": "def add_vat(amount):\n    '''Price with sales tax included.'''\n    return amount * 1.2\n",
    "shapes.py": "class Circle:\n    def area(self):\n        return 3.14159 * self.r ** 2\n",
}


def test_the_extra_is_installed_for_the_suite():
    # A missing extra would quietly make search BM25 alone: setup installs it, so say so here.
    assert semantic.load() is not None, "plugkit[semantic] is missing: run scripts/setup"


def test_a_query_without_a_shared_word_finds_the_code_through_the_vectors(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, text in CODE.items():
        (ws / name).write_text(text)
    plain, dense = SearchManager(str(tmp_path / "h1"), semantic_layer=False), SearchManager(str(tmp_path / "h2"), semantic_layer=True)
    try:
        assert plain.query(str(ws), "retrieve website contents").hits == []  # BM25 alone: no shared word
        first = dense.query(str(ws), "start")  # a query starts loading the model and the build, never waits
        assert first.semantic == "the semantic model is loading: BM25 alone this time"
        dense.ready(str(ws), 300)
        a = dense.query(str(ws), "retrieve website contents")
        assert a.hits[0].path == "net.py" and a.semantic is None
        with dense.workspace(str(ws)).embedder._lock:  # the filler mid-batch: the query goes without
            busy = dense.query(str(ws), "add_vat retrieve")
        assert busy.semantic == "the semantic layer is busy filling vectors: BM25 alone this time"
        (ws / "money.py").write_text("def add_vat(amount):\n    '''Compute the invoice total.'''\n    return 1\n")
        assert dense.query(str(ws), "add_vat").definitions[0].path == "money.py"  # BM25 at once
        dense.ready(str(ws), 300)
        assert dense.workspace(str(ws)).store.unembedded(10) == []  # the saved file was embedded again
        done = dense.status()[0]["vectors"]
        assert done["done"] == done["total"] > 0 and plain.status()[0]["vectors"] is None
    finally:
        plain.close()
        dense.close()


def _workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, text in CODE.items():
        (ws / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def test_the_runner_and_cli_fuse_the_vectors_unless_turned_off(home, tmp_path):
    ws = _workspace(tmp_path)
    on = {"PLUGKIT_SEARCH_SEMANTIC": "1"}  # the suite's runners run without it (tests/conftest.py)
    assert home.cli("runner", "start", env=on).returncode == 0
    assert home.cli("search", "start", cwd=ws).returncode == 0  # a query loads the model, builds, embeds
    deadline = time.monotonic() + 300
    while True:
        status = json.loads(home.cli("search", "--status", "--json", cwd=ws).stdout)
        vectors = status["workspaces"][0].get("vectors")
        if vectors and vectors["total"] and vectors["done"] == vectors["total"]:
            break
        assert time.monotonic() < deadline, status
        time.sleep(0.5)
    found = json.loads(home.cli("search", "retrieve", "website", "contents", "--json", cwd=ws).stdout)
    assert found["hits"][0]["path"] == "net.py"
    assert "semantic 4/4 chunks embedded" in home.cli("search", "--status", cwd=ws).stdout

    assert home.cli("runner", "stop").returncode == 0
    assert home.cli("runner", "start", env={"PLUGKIT_SEARCH_SEMANTIC": "0"}).returncode == 0
    plain = json.loads(home.cli("search", "retrieve", "website", "contents", "--json", cwd=ws).stdout)
    assert plain["hits"] == []  # BM25 alone: no word shared
    assert json.loads(home.cli("search", "--status", "--json", cwd=ws).stdout)["workspaces"][0].get("vectors") is None
