"""The semantic layer with its real model (`plugkit[semantic]`, torch-free, which scripts/setup installs
for the suite): a plain-words question that shares no word with the code finds it through the
vectors; an exact identifier hit at rank 1 is never pushed down by them; a query while the vectors
fill answers at once from BM25 and says so, without touching the model; the real runner and CLI
answer the same way unless the operator turned the layer off."""

import json
import subprocess
import sys
import threading
import time

import pytest

from runner.core.search import semantic
from runner.core.search.manager import SearchManager

CODE = {
    "pager.py": "def fetch_page(items, size):\n    '''Slice one screen of rows for the table view.'''\n    return items[:size]\n",
    "net.py": "def download(url):\n    '''Fetch a web page over HTTP and return its body.'''\n    return urlopen(url).read()\n",
    "crawl.py": "def crawl(site):\n    '''Walk a web site, getting each page from the server.'''\n"
                "    for link in links(site):\n        yield get(link)\n",
    "scrape.py": "def scrape(url):\n    '''Download the HTML of a web page.'''\n    return http_get(url).text\n",
    "mirror.py": "def mirror(site):\n    '''Save a copy of every web page of a site.'''\n    return [save(p) for p in site]\n",
    "browser.py": "def open_url(url):\n    '''Load a web page in the browser window.'''\n    return window.load(url)\n",
    "money.py": "def add_vat(amount):\n    '''Price with sales tax included.'''\n    return amount * 1.2\n",
}
WEB = {"net.py", "crawl.py", "scrape.py", "mirror.py", "browser.py"}


def _write(ws):
    ws.mkdir()
    for name, text in CODE.items():
        (ws / name).write_text(text)
    return ws


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """One workspace, searched by BM25 alone and with the layer (its model loaded and every chunk embedded)."""
    ws = _write(tmp_path_factory.mktemp("sem") / "ws")
    plain = SearchManager(str(tmp_path_factory.mktemp("h1")), semantic_layer=False)
    dense = SearchManager(str(tmp_path_factory.mktemp("h2")), semantic_layer=True)
    first = dense.query(str(ws), "start")  # a query starts loading the model and the build, never waits
    assert first.semantic == "the semantic model is loading: BM25 alone this time"
    dense.ready(str(ws), 120)
    yield str(ws), plain, dense
    plain.close()
    dense.close()


def test_the_extra_is_installed_for_the_suite_and_needs_no_torch():
    # A missing extra would quietly make search BM25 alone: setup installs it, so say so here.
    assert semantic.load() is not None, "plugkit[semantic] is missing: run scripts/setup"
    assert "torch" not in sys.modules  # ~1.4 GB of runner memory for the model it used to run


def test_a_plain_words_question_finds_code_that_shares_no_word_with_it(both):
    ws, plain, dense = both
    assert plain.query(ws, "retrieve website contents").hits == []  # BM25 alone: no shared word
    a = dense.query(ws, "retrieve website contents")
    assert a.kind == "concept" and a.semantic is None and a.hits[0].path in WEB


@pytest.mark.parametrize("question", ["get the web page with fetch_page", "how does fetch_page get a page from the web"])
def test_an_exact_identifier_hit_is_never_demoted_by_the_vectors(both, question):
    # Every other file is nearer the question's meaning than pager.py: with equal-weight fusion
    # net.py (BM25 rank 3, nearest) took rank 1 from the function the question names.
    ws, plain, dense = both
    assert plain.query(ws, question).hits[0].path == "pager.py"
    a = dense.query(ws, question)
    assert a.semantic is None and "money.py" in {h.path for h in a.hits}  # the vectors did join
    assert a.hits[0].path == "pager.py"


@pytest.mark.parametrize("question", ["fetch_page", "pager.fetch_page", "who calls fetch_page"])
def test_vectors_join_no_identifier_qualified_or_usage_question(both, question):
    ws, plain, dense = both
    assert [(h.path, h.line) for h in dense.query(ws, question).hits] == [(h.path, h.line) for h in plain.query(ws, question).hits]


class _Held:
    """The real model with the filler held inside its batch until released: what a query sees
    while the vectors fill, made certain rather than raced."""

    def __init__(self, model) -> None:
        self.name = model.name
        self._model = model
        self.inside = threading.Event()
        self.release = threading.Event()
        self.query_calls = 0

    def encode(self, texts):
        self.inside.set()
        assert self.release.wait(60)
        return self._model.encode(texts)

    def encode_query(self, text, *wait):
        self.query_calls += 1
        return self._model.encode_query(text, *wait)


def test_a_query_while_vectors_fill_answers_from_bm25_at_once(tmp_path, monkeypatch):
    held = _Held(semantic.load())
    monkeypatch.setattr(semantic, "load", lambda: held)
    ws = str(_write(tmp_path / "ws"))
    manager = SearchManager(str(tmp_path / "home"), semantic_layer=True)
    try:
        manager.query(ws, "start")
        assert held.inside.wait(60)  # the filler is inside its first batch and stays there
        a = manager.query(ws, "retrieve website contents")
        assert a.semantic == "vectors still filling (0/7 chunks): BM25 alone this time" and a.hits == []
        assert manager.query(ws, "add_vat price").hits[0].path == "money.py"  # BM25 answers meanwhile
        assert held.query_calls == 0  # the query never touched the model, so never queued behind it
        held.release.set()
        manager.ready(ws, 60)
        b = manager.query(ws, "retrieve website contents")
        assert b.semantic is None and b.hits[0].path in WEB and held.query_calls == 1
        (tmp_path / "ws" / "money.py").write_text("def add_vat(amount):\n    '''The invoice total.'''\n    return 1\n")
        assert manager.query(ws, "add_vat").definitions[0].path == "money.py"  # BM25 at once
        manager.ready(ws, 60)
        assert manager.workspace(ws).store.unembedded(10) == []  # the saved file was embedded again
        assert manager.status()[0]["vectors"] == {"done": 7, "total": 7}
    finally:
        held.release.set()
        manager.close()


def test_the_runner_and_cli_fuse_the_vectors_unless_turned_off(home, tmp_path):
    ws = _write(tmp_path / "ws")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    on = {"PLUGKIT_SEARCH_SEMANTIC": "1"}  # the suite's runners run without it (tests/conftest.py)
    assert home.cli("runner", "start", env=on).returncode == 0
    assert home.cli("search", "start", cwd=ws).returncode == 0  # a query loads the model, builds, embeds
    deadline = time.monotonic() + 120
    while True:
        status = json.loads(home.cli("search", "--status", "--json", cwd=ws).stdout)
        vectors = status["workspaces"][0].get("vectors")
        if vectors and vectors["total"] and vectors["done"] == vectors["total"]:
            break
        assert time.monotonic() < deadline, status
        time.sleep(0.2)
    found = json.loads(home.cli("search", "retrieve", "website", "contents", "--json", cwd=ws).stdout)
    assert found["hits"][0]["path"] in WEB
    assert "semantic 7/7 chunks embedded" in home.cli("search", "--status", cwd=ws).stdout

    assert home.cli("runner", "stop").returncode == 0
    assert home.cli("runner", "start", env={"PLUGKIT_SEARCH_SEMANTIC": "0"}).returncode == 0
    plain = json.loads(home.cli("search", "retrieve", "website", "contents", "--json", cwd=ws).stdout)
    assert plain["hits"] == []  # BM25 alone: no word shared
    assert json.loads(home.cli("search", "--status", "--json", cwd=ws).stdout)["workspaces"][0].get("vectors") is None
