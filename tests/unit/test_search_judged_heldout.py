"""The held-out judged sets of scripts/bench_search_untuned.py (four over the stdlib, Python-Markdown, rich,
docutils, werkzeug, pygments):
they load, and every judged path and line range is in the corpus the bench builds, which plugkit lists whole."""

import os
import re
import sys
from pathlib import Path

import pytest

from runner.core.search import files

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "scripts"))
import bench_search_untuned as untuned  # noqa: E402

sys.path.pop(0)

HELD_OUT = ["stdlib", "markdown", "rich", "stdlib-h46", "docutils", "werkzeug", "stdlib-h47", "pygments", "stdlib-h48"]
CATEGORIES = {"identifier", "concept", "usage", "qualified", "error"}
needs_stdlib = pytest.mark.skipif(not os.path.exists(untuned.STDLIB_CORPORA["stdlib"][0]),
                                  reason="needs Debian's python3.11 standard library")


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    """Each set's corpus as the bench builds it, under a cache of this test's own (the wheel is fetched once)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        yield {name: untuned.corpus_root(name) for name in HELD_OUT + ["stdlib-errors-dev"]
               if name not in untuned.STDLIB_CORPORA or os.path.exists(untuned.STDLIB_CORPORA[name][0])}


@pytest.mark.parametrize("name", HELD_OUT)
def test_a_held_out_set_loads_with_its_categories_and_grades(name):
    assert untuned.SETS[name][1] in ("held-out", "dev, held out once")  # judged once as held out, at least
    queries = untuned.load(name)
    assert CATEGORIES == {q["category"] for q in queries}
    assert len({q["query"] for q in queries}) == len(queries)  # no query judged twice
    for q in queries:
        assert q["relevant"] and all(g in (1, 2) for g in q["relevant"].values()), q
        assert q["lines"] and all(path in q["relevant"] for path, _, _ in q["lines"]), q


@pytest.mark.parametrize("name", [pytest.param("stdlib", marks=needs_stdlib), "markdown", "rich",
                                  pytest.param("stdlib-h46", marks=needs_stdlib), "docutils", "werkzeug",
                                  pytest.param("stdlib-h47", marks=needs_stdlib), "pygments",
                                  pytest.param("stdlib-errors-dev", marks=needs_stdlib),
                                  pytest.param("stdlib-h48", marks=needs_stdlib)])
def test_every_judged_path_and_line_range_is_in_the_corpus(roots, name):
    """Lines are numbered as grep -n and the bench's readers number them: a form feed (email/feedparser.py has
    two) is no line break, though str.splitlines counts it as one."""
    root = roots[name]
    for q in untuned.load(name):
        for path in q["relevant"]:
            assert os.path.isfile(os.path.join(root, path)), (q["query"], path)
        for path, start, end in q["lines"]:
            with open(os.path.join(root, path), errors="replace") as f:
                text = f.read().split("\n")
            assert 1 <= start <= end <= len(text), (q["query"], path, start, end)
            assert text[start - 1].strip() and text[end - 1].strip(), (q["query"], path, start, end)


@needs_stdlib
def test_the_stdlib_corpus_is_filtered_and_plugkit_lists_every_file_the_baselines_read(roots):
    root = roots["stdlib"]
    walked = {os.path.relpath(os.path.join(d, n), root) for d, _, names in os.walk(root) for n in names}
    assert walked and all(p.endswith(".py") for p in walked)
    parts = {part for p in walked for part in p.split("/")[:-1]}
    assert not parts & {"test", "tests", "idlelib", "site-packages", "dist-packages", "venv", "__pycache__"}
    assert "lib2to3/pgen2/tokenize.py" in walked and "json/decoder.py" in walked  # packages kept, tests left out
    assert set(files.list_files(root)) == walked  # the same files for plugkit and for whole-file BM25 / grep


def test_a_held_out_set_asks_no_question_another_set_asks():
    asked: dict[str, str] = {}
    for name in untuned.SETS:
        for q in untuned.load(name):
            assert asked.setdefault(q["query"], name) == name, (q["query"], asked[q["query"]], name)


def test_the_second_stdlib_set_asks_about_modules_the_earlier_stdlib_sets_do_not():
    """Only a callers' answer may name a file the stdlib and stdlib-dev sets judged (a caller of the new module)."""
    earlier = {path for name in ("stdlib", "stdlib-dev") for q in untuned.load(name) for path in q["relevant"]}
    for q in untuned.load("stdlib-h46"):
        assert q["category"] == "usage" or not set(q["relevant"]) & earlier, q["query"]


def test_the_third_stdlib_set_asks_about_modules_no_earlier_stdlib_set_does():
    """stdlib-h47 was written when the three earlier stdlib sets had all been seen by the people ranking: only a
    callers' answer may name a file one of them judged."""
    earlier = {path for name in ("stdlib", "stdlib-dev", "stdlib-h46") for q in untuned.load(name) for path in q["relevant"]}
    queries = untuned.load("stdlib-h47")
    assert len(queries) >= 55
    for q in queries:
        assert q["category"] == "usage" or not set(q["relevant"]) & earlier, q["query"]


def test_the_fifth_stdlib_set_asks_about_modules_no_earlier_stdlib_set_does():
    """stdlib-h48 was written when every earlier stdlib set, the pasted-error dev set too, had been seen by the people
    ranking: only a callers' answer may name a file one of them judged, and it asks as agents do, in every kind."""
    earlier = {path for name in ("stdlib", "stdlib-dev", "stdlib-h46", "stdlib-h47", "stdlib-errors-dev")
               for q in untuned.load(name) for path in q["relevant"]}
    queries = untuned.load("stdlib-h48")
    assert len(queries) >= 45
    for q in queries:
        assert q["category"] == "usage" or not set(q["relevant"]) & earlier, q["query"]
    for q in queries:
        if q["category"] == "usage":  # a callers' question is about a new module: no earlier set judged its definition
            assert any(g == 1 and path not in earlier for path, g in q["relevant"].items()), q["query"]
    kinds = [q["category"] for q in queries]
    assert kinds.count("concept") >= 18 and min(kinds.count(kind) for kind in CATEGORIES) >= 6
    errors = [q["query"] for q in queries if q["category"] == "error"]
    framed = [e for e in errors if '  File "' in e]
    typed = [e for e in errors if e not in framed and re.match(r"[\w.]+: ", e)]
    assert framed and typed and len(errors) > len(framed) + len(typed)  # tracebacks, `Type: msg` and bare ones


@needs_stdlib
@pytest.mark.parametrize("name", ["stdlib-h46", "stdlib-h47", "stdlib-h48"])
def test_the_later_stdlib_sets_read_the_stdlib_sets_copy(roots, name):
    assert untuned.STDLIB_CORPORA[name] == untuned.STDLIB_CORPORA["stdlib"]
    assert roots[name] == roots["stdlib"]  # one copy of the same files, not a second one


def test_the_later_hands_sets_are_over_packages_no_other_set_reads():
    """docutils, werkzeug and pygments were picked because no set used them: a wheel another set reads is a corpus
    someone tuned on."""
    packages = {name: untuned.judged(name).get("package") for name in untuned.SETS if name not in untuned.STDLIB_CORPORA}
    for name in ("docutils", "werkzeug", "pygments"):
        assert list(packages.values()).count(packages[name]) == 1, (name, packages)
        assert len(untuned.load(name)) >= 35


def test_every_judged_file_is_a_source_file_plugkit_lists(roots):
    """A judged path must be one plugkit indexes, or no ranking could ever find it."""
    for name in ("docutils", "werkzeug", "pygments"):
        listed = set(files.list_files(roots[name]))
        for q in untuned.load(name):
            assert set(q["relevant"]) <= listed, (name, q["query"], set(q["relevant"]) - listed)


@pytest.mark.parametrize("name", [pytest.param("stdlib-h47", marks=needs_stdlib), "pygments",
                                  pytest.param("stdlib-h48", marks=needs_stdlib)])
def test_a_name_query_of_the_fourth_hands_sets_is_judged_at_its_definition(roots, name):
    """An identifier or qualified name is answered where it is defined: its first judged range opens with the
    def or class of the name's last part (a range off by a few lines would point at someone else's code)."""
    for q in untuned.load(name):
        if q["category"] in ("identifier", "qualified"):
            path, start, _ = q["lines"][0]
            with open(os.path.join(roots[name], path), errors="replace") as f:
                first = f.read().split("\n")[start - 1]
            name_part = re.escape(q["query"].split(".")[-1])
            assert re.match(rf"\s*(async\s+)?(def|class)\s+{name_part}\b", first), (q["query"], first)
