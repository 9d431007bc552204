"""A pasted error's definitions are what its message names as code (issue 46, werkzeug 3.0.3): a
capitalised word inside a run of capitalised words ("400 Bad Request: ...", an HTTP status line) is
prose, so werkzeug's two `Request` classes did not lead the answer to a BadRequestKeyError. Pure logic
over definition records."""

from runner.core.search import exact
from runner.core.search.store import DefHit


def _def(name: str, path: str) -> DefHit:
    return DefHit(name=name, path=path, line=1, kind="class", score=1.0)


DEFS = [_def("BadRequestKeyError", "pkg/exceptions.py"), _def("Request", "pkg/wrappers.py"),
        _def("Color", "pkg/colors.py")]


def test_a_word_of_a_title_case_run_names_no_class():
    text = ("pkg.exceptions.BadRequestKeyError: 400 Bad Request: The browser sent a request this server "
            "could not understand.")
    assert [d.name for d in exact.named_in(text, DEFS)] == ["BadRequestKeyError"]


def test_a_capitalised_word_written_alone_still_names_its_class():
    assert [d.name for d in exact.named_in("ValueError: 7 is not a valid Color", DEFS)] == ["Color"]
    # written once in a run and once alone: the lone one is a name
    text = "TypeError: Bad Request given; expected a Request"
    assert [d.name for d in exact.named_in(text, DEFS)] == ["Request"]


def test_title_cased_words():
    assert exact.title_cased("400 Bad Request: The browser (or proxy) sent") == {"Bad", "Request"}
    assert exact.title_cased("ValueError: 7 is not a valid Color") == set()
