"""A plain-words question on a real index (SQLite FTS5, no daemon): the code that does what it asks
comes before a package's prose about it, and a file saved between two questions counts in the second
(the words' chunks are kept between queries until the index changes, issue 46)."""

import pytest

from runner.core.search.manager import SearchManager
from tests.support.search_files import ask


def _ask(tmp_path, files: dict[str, str], question: str):
    """`question`'s answer over a repository of `files`, once its index is built (no history)."""
    return ask(tmp_path, files, question)


QUESTION = "compare the package version with a tuple"
FILES = {
    # A wheel's METADATA: the package's whole description, every common word of the question in it.
    "pkg-1.0.dist-info/METADATA": ("Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n\n"
                                   + "".join(f"pkg helps with chore number {i} of a package.\n" for i in range(20))
                                   + "You can compare the package version with a tuple, like sys.version_info.\n"),
    "pkg/_version_info.py": ("class VersionInfo:\n    '''The package's version.'''\n\n"
                             "    def __eq__(self, other):\n        '''Compare with a tuple.'''\n"
                             "        return self.as_tuple() == tuple(other)\n"),
    **{f"pkg/mod{i}.py": f"def helper{i}(value):\n    '''Compare value with {i}.'''\n    return value == {i}\n"
       for i in range(4)},
}


@pytest.fixture
def searched(tmp_path):
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    manager = SearchManager(str(tmp_path / "home"), semantic_layer=False)
    manager.query(str(root), "start")
    manager.workspace(str(root)).wait(60)
    yield root, lambda q: manager.query(str(root), q, limit=10, history=False)
    manager.close()


def test_a_plain_words_question_is_answered_by_code_before_a_package_description(searched):
    _, ask = searched
    a = ask(QUESTION)
    assert a.kind == "concept" and a.hits[0].path == "pkg/_version_info.py", [(h.path, h.symbol) for h in a.hits]


def test_a_file_saved_between_two_questions_counts_in_the_second(searched):
    root, ask = searched
    assert "pkg/tuples.py" not in [h.path for h in ask(QUESTION).hits]
    (root / "pkg/tuples.py").write_text("def compare_version_tuple(package, version):\n"
                                        "    '''Compare the package version with a tuple.'''\n"
                                        "    return tuple(version) == package.version\n")
    assert ask(QUESTION).hits[0].path == "pkg/tuples.py", [(h.path, h.symbol) for h in ask(QUESTION).hits]


# A definition whose name holds two of the question's words (`_path_split`) in a file that says
# nothing else of it, against the function whose words in context answer it: the standard
# library's "split a path into directory and file name" answered by importlib's helper (issue 46).
SPLIT = {
    "pkg/loader.py": ("def _path_split(spec):\n    '''The spec's origin, for the import system.'''\n"
                      "    return spec.origin\n"),
    "pkg/paths.py": ("def split(p):\n    '''Split a pathname into the directory and the file name.'''\n"
                     "    head, _, tail = p.rpartition('/')\n    return head, tail\n\n\n"
                     "def dirname(p):\n    '''The directory of a path.'''\n    return split(p)[0]\n"),
    "pkg/ntpaths.py": ("def split(p):\n    '''Split a Windows path into its directory and file name.'''\n"
                       "    head, _, tail = p.rpartition(chr(92))\n    return head, tail\n"),
    **{f"pkg/other{i}.py": f"def path{i}(name):\n    '''A name.'''\n    return name\n" for i in range(4)},
}


def test_a_plain_words_question_shows_definitions_only_from_the_files_its_words_rank(tmp_path):
    a = _ask(tmp_path, SPLIT, "split a path into directory and file name")
    assert a.hits[0].path in ("pkg/paths.py", "pkg/ntpaths.py"), [(h.path, h.symbol, round(h.score, 2)) for h in a.hits]
    assert "_path_split" not in [d.name for d in a.definitions], (a.definitions, [(h.path, h.symbol) for h in a.hits])


def test_a_file_edited_in_place_between_two_questions_counts_in_the_second(tmp_path):
    """The words' chunks are kept between questions until the index is written: an edit in place
    changes no file count, yet which chunks hold a word (postings.py)."""
    from runner.core.search import concept, postings

    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def a():\n    return 1\n")
    (root / "b.py").write_text("def b():\n    return 2\n")
    manager = SearchManager(str(tmp_path / "home"), semantic_layer=False)
    try:
        manager.query(str(root), "start")
        manager.workspace(str(root)).wait(60)
        store = manager.workspace(str(root)).store
        walrus = concept.match(["walrus"])
        assert postings.of(store, walrus, None, None).files == {}
        (root / "a.py").write_text("def a():\n    return 'walrus'\n")  # the same file count
        manager.query(str(root), "how is the walrus fed")
        assert postings.of(store, walrus, None, None).files == {"a.py": 1}
    finally:
        manager.close()


# The module about a question (the stdlib's logging/handlers.py for "roll the log over past a size")
# says its words in chunk after chunk; a big module of other things says them once, in one short
# function. Whole-file BM25 finds the first; chunk BM25 alone ranked the short function first.
ROTATE = {
    "pkg/rotating.py": ("'''Log handlers that rotate their file.'''\n\n\n"
                        "def should_rotate(stream, limit):\n    '''True when the log file grew past limit.'''\n"
                        "    return stream.tell() >= limit\n\n\n"
                        "def rotated(path, n):\n    '''The name of the n-th rotated log file.'''\n"
                        "    return f'{path}.{n}'\n\n\n"
                        "def rotate(path, count):\n    '''Rotate the log: each older file takes the next name.'''\n"
                        + "".join(f"    step{i} = rotated(path, {i})\n" for i in range(8)) + "    return path\n"),
    "pkg/misc.py": ("def roll(log, limit):\n    '''Rotate the log file past a size limit.'''\n    return log\n\n\n"
                    + "".join(f"def chore{i}(value):\n    '''Chore {i} on a value.'''\n"
                              + "".join(f"    v{j} = value + {j}\n" for j in range(12)) + "    return value\n\n\n"
                              for i in range(30))),
    **{f"pkg/other{i}.py": f"def size{i}(file):\n    '''The size of a file.'''\n    return {i}\n" for i in range(4)},
}


def test_a_plain_words_question_ranks_the_file_about_it_above_a_big_file_saying_it_once(tmp_path):
    a = _ask(tmp_path, ROTATE, "rotate the log file when it grows past a size limit")
    assert a.hits[0].path == "pkg/rotating.py", [(h.path, h.symbol, round(h.score, 2)) for h in a.hits]


# A question's English ("like a shell would") said by a chunk about something else: rare in code, those
# words outweighed the ones that name what the question asks for.
SHELL = {
    "pkg/shellwords.py": ("def split_command(line):\n    '''Split a command line into words.'''\n"
                          "    return line.split()\n"),
    "pkg/prose.py": ("def describe(words):\n    '''The words as a person would like to read them in a shell, a line each.'''\n"
                     "    return ' '.join(words)\n"),
    **{f"pkg/other{i}.py": f"def command{i}(line):\n    '''Run command {i} on a line.'''\n    return line\n"
       for i in range(4)},
}


def test_a_plain_words_question_is_not_ranked_by_its_english(tmp_path):
    a = _ask(tmp_path, SHELL, "split a command line into words like a shell would")
    assert a.hits[0].path == "pkg/shellwords.py", [(h.path, h.symbol, round(h.score, 2)) for h in a.hits]


# A module named by a word of the question (base64.py) against a function elsewhere named by another
# of its words (`encode`, which the definitions' weight favours): the module is about the question
# (stdlib's "encode bytes as base64 text" answered by xmlrpc's client before base64.py).
TITLED = {
    "pkg/base64.py": "def b64encode(s):\n    '''Encode the bytes-like object s as text.'''\n    return s\n",
    "pkg/codec.py": "def encode(data):\n    '''Encode bytes.'''\n    return data\n",
    **{f"pkg/other{i}.py": f"def text{i}(name):\n    '''Some text.'''\n    return name\n" for i in range(4)},
}


def test_a_plain_words_question_ranks_the_module_it_names_first(tmp_path):
    from runner.core.search import concept

    a = _ask(tmp_path, TITLED, "encode bytes as base64 text")
    assert a.kind == "concept" and [h.path for h in a.hits][:2] == ["pkg/base64.py", "pkg/codec.py"], \
        [(h.path, h.symbol, round(h.score, 2)) for h in a.hits]
    # The words a file is named by: a package's __init__ by its package, a compound name by its parts.
    assert concept.stem("marker") in concept.title("packaging/markers.py")  # "marker" meets markers.py
    assert "re" in concept.title("re/__init__.py") and {"tag", "utils"} <= concept.title("pkg/_tag_utils.py")


# The module a question names (argparse.py) leading its answer, and a namesake elsewhere sharing three of
# its common words (http.client's LineTooLong for "the usage line when it is too long"): the namesake is
# no definition of the answer. One in a package the question names (urllib/request.py) still is.
NAMED = {
    "pkg/argparse.py": ("class HelpFormatter:\n    def format_usage(self, usage, width):\n"
                        "        '''Wrap the usage line when it is too long for the width.'''\n"
                        "        return usage.wrap(width)\n"),
    "pkg/client.py": ("class LineTooLong(Exception):\n    '''A header line was too long to read.'''\n\n\n"
                      "def read_line(f):\n    '''Read a line; a long one raises LineTooLong.'''\n    return f.readline()\n"),
    # A fixer named after urllib that says the question's words more often than the handler does.
    "lib/fix_urllib.py": ("# Fix urllib imports: where urllib's http redirect names moved, follow them.\n"
                          "MAPPING = {'urllib': ['http', 'redirect', 'follow'], 'urllib2': ['redirect', 'http']}\n"),
    "lib/urllib/request.py": ("class HTTPRedirectHandler:\n    '''Follow an HTTP redirect to its new location.'''\n"
                              "    def redirect_request(self, req):\n        return req\n"),
    **{f"pkg/other{i}.py": f"def text{i}(name):\n    '''Some text about line {i}.'''\n    return name\n" for i in range(4)},
}


def test_a_module_the_question_names_is_not_passed_over_for_a_namesake_definition_elsewhere(tmp_path):
    a = _ask(tmp_path, NAMED, "how does argparse wrap the usage line when it is too long")
    assert a.hits[0].path == "pkg/argparse.py", [(h.path, h.symbol) for h in a.hits]
    assert "pkg/client.py" not in {d.path for d in a.definitions}, a.definitions


def test_a_definition_in_a_package_the_question_names_still_answers_it(tmp_path):
    a = _ask(tmp_path, NAMED, "where does urllib follow an http redirect")
    assert [(d.name, d.path) for d in a.definitions][:1] == [("HTTPRedirectHandler", "lib/urllib/request.py")], \
        (a.definitions, [(h.path, h.symbol) for h in a.hits])



def test_a_module_is_named_by_a_word_its_run_together_name_begins_with():
    from runner.core.search import concept

    assert concept.named_by("packaging/_musllinux.py", ["detect", "musl", "libc"])
    assert concept.named_by("multiprocessing/forkserver.py", ["processes", "forked"])  # by the word's stem
    assert not concept.named_by("pkg/setup.py", ["se", "it"])  # two letters begin too many names
    assert not concept.named_by("hashlib.py", ["has"])  # "has" is English, not a name
    assert concept.named_by("lib/urllib/request.py", ["urllib"], package=True)
    assert not concept.named_by("lib/urllib/request.py", ["urllib"])
