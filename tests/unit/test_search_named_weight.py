"""A definition named by one word of a plain-words question weighs more only as far as its chunk says
the rest of the question (issue 46, werkzeug 3.0.3: the `Range` class outranked the method answering
"answer 206 partial content when the request has a Range header"; `walk` still answers "walk a
directory tree" where its chunk says it). Indexed for real (SQLite FTS5, no daemon)."""

import math

from runner.core.search import concept
from runner.core.search.postings import Postings
from runner.core.search.store import Hit
from tests.support.search_files import ask

FILES = {
    # A data structure named by the question's commonest word, its short chunk saying little else of it.
    "pkg/datastructures.py": ("class Range:\n    \"\"\"A parsed range: its unit and its ranges.\"\"\"\n\n"
                              "    def __init__(self, units, ranges):\n        self.units = units\n"
                              "        self.ranges = ranges\n"),
    # The code doing what the question asks: its words in context, its name one of the question's too.
    "pkg/wrappers.py": ("def process_range_request(self, environ, length):\n"
                        "    \"\"\"Send only the part asked for when a range header came with the request.\"\"\"\n"
                        "    if parse_header(environ.get('HTTP_RANGE')) is None:\n        return False\n"
                        "    self.status_code = 206\n    return True\n"),
    # The question's other words are common: every module handles requests, headers and content.
    **{f"pkg/mod{i}.py": (f"def handle{i}(request):\n    \"\"\"Read the request header and its content.\"\"\"\n"
                          "    return request.header, request.content\n") for i in range(12)},
}


def test_a_class_named_by_one_common_word_does_not_outrank_the_code_answering_the_question(tmp_path):
    a = ask(tmp_path, FILES, "answer with partial content when the request has a range header")
    assert a.kind == "concept" and a.hits[0].path == "pkg/wrappers.py", [(h.path, h.symbol) for h in a.hits]


def test_the_named_definition_s_weight_grows_with_what_its_chunk_says_of_the_question():
    words = ["walk", "directory", "tree"]
    posts = {"walk": Postings(frozenset({1, 2}), {}), "directory": Postings(frozenset({1}), {}),
             "tree": Postings(frozenset({1}), {})}
    idf = {"walk": 1.0, "directory": 1.0, "tree": 1.0}

    def cover(found):
        return sum(idf[w] for w in found) / sum(idf.values())

    says_it = Hit("os.py", 1, 9, "walk", 1.0, 1)
    name_only = Hit("bdb.py", 1, 9, "walk", 1.0, 2)
    other = Hit("os.py", 10, 19, "scandir", 1.0, 1)
    assert concept.named_weight(says_it, words, posts, cover) == concept.NAMED
    assert concept.named_weight(name_only, words, posts, cover) == 1.0
    assert concept.named_weight(other, words, posts, cover) == 1.0
    half = Hit("x.py", 1, 9, "walk", 1.0, 3)
    posts["tree"] = Postings(frozenset({1, 3}), {})
    assert math.isclose(concept.named_weight(half, words, posts, cover), 1.0 + (concept.NAMED - 1.0) * min(
        1.0, (1 / 3) / concept.NAMED_SAYS))
