"""The query-kind classifier and the ranking rule each kind gets (issue 46), on a small repository
indexed for real (SQLite FTS5, no daemon): the rules are pure, the index is the part they steer."""

import pytest

from runner.core.search import kind
from tests.support.search_files import ask, indexed


@pytest.mark.parametrize("query, expected", [
    ("parse_args", "identifier"),
    ("FrozenInstanceError", "identifier"),
    ("TypeError: evolve() missing 1 required positional argument: 'inst'", "error"),
    ('Traceback (most recent call last):\n  File "x.py", line 1', "error"),
    ("pkg.requirements.InvalidRequirement: Expected end or semicolon", "error"),  # no Error in its name
    ("note: see pkg.mod for how it is done", "concept"),
    ("attr.validators.optional", "qualified"),
    ("Attribute.evolve", "qualified"),
    ("who calls fields", "usage"),
    ("where is Factory used", "usage"),
    ("which functions raise FrozenInstanceError", "usage"),
    ("which formats can a plain text file without markup use", "concept"),  # its verb is no usage verb
    ("why did the retry timeout change", "why"),
    ("convert a string like yes to a boolean", "concept"),
    ("copy an instance with some attributes changed", "concept"),  # what code does, not its history
    ("which commit removed the retry", "why"),
    ("when was the cache introduced", "why"),
    ("when did the retry timeout change", "why"),
    ("when one task of a group fails how are its sibling tasks cancelled", "concept"),  # a condition, not a date
    ("when an item is put how is a waiting reader woken", "concept"),
])
def test_a_query_is_classified_by_its_shape(query, expected):
    assert kind.classify(query) == expected


def test_a_plain_words_question_needs_more_than_one_common_word_in_a_definition_name():
    words = ["read", "file", "chunks"]
    assert not kind.concept_def_ok("read", words)  # a single common word: not the answer
    assert kind.concept_def_ok("read_file_chunks", words)
    assert kind.concept_def_ok("read_chunks", words)
    assert not kind.concept_def_ok("__init__", ["generate", "__init__", "method"])  # a dunder is one common word


def test_a_compound_written_as_one_word_is_the_compound_another_definition_spells_in_parts():
    words = ["namedtuple", "generate", "tuple", "subclass"]
    assert not kind.concept_def_ok("namedtuple", words)  # alone, one word like `read`
    assert kind.concept_def_ok("namedtuple", words, frozenset({"namedtuple"}))  # NamedTuple spells it in parts
    assert kind.concept_def_ok("NamedTuple", words)


def test_a_usage_question_is_about_its_target_and_a_qualified_name_splits():
    assert kind.usage_target("who calls setters.pipe") == ["setters", "pipe"]
    assert kind.qualifier("pkg.mod.func") == (["pkg", "mod"], "func")


FILES = {
    "pkg/validators.py": "def optional(validator):\n    '''Make a validator optional.'''\n    return validator\n",
    "pkg/converters.py": "def optional(converter):\n    '''Make a converter optional.'''\n    return converter\n",
    "pkg/short.py": "def read():\n    return 1\n",
    "pkg/loader.py": ("def load_in_pieces(path, size):\n    '''Read the file in chunks of size bytes.'''\n"
                      "    with open(path, 'rb') as f:\n        while block := f.read(size):\n            yield block\n"),
    "pkg/helper.py": "def helper():\n    return 2\n",
    "pkg/notes.py": "# helper() returns two: see pkg.helper\nHELPER = 'helper'\n",  # mentions it, calls nothing
    **{f"pkg/user{i}.py": "from pkg.helper import helper\n\n\n" + "".join(
        f"def use{j}():\n    return helper() + {j}\n\n\n" for j in range(4)) for i in range(3)},
}


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    with indexed(tmp_path_factory, FILES, "repo") as ask:
        yield ask


def test_a_qualified_name_picks_the_definition_its_qualifier_names(searched):
    for query, path in (("pkg.validators.optional", "pkg/validators.py"),
                        ("pkg.converters.optional", "pkg/converters.py")):
        assert searched(query).definitions[0].path == path


def test_a_plain_words_question_is_not_answered_by_a_one_word_definition(searched):
    a = searched("read the file in chunks")
    assert "read" not in [d.name for d in a.definitions]
    assert "pkg/loader.py" in [h.path for h in a.hits]


# One common word of a question ("convert") as short definitions' name, against the chunk that says
# the whole question; the question's other words are common in the package (attrs' to_bool, issue 46).
PROSE = {
    "pkg/setters.py": "def convert(value):\n    return value\n",
    "pkg/stub.pyi": "def convert(value: str) -> str: ...\n",
    "pkg/booleans.py": ("def to_bool(val):\n    \"Convert a string like yes or on to a boolean.\"\n"
                        + "".join(f"    step{i} = normalise(val, {i})\n" for i in range(3))
                        + "    return str(val).lower() in ('yes', 'on', 'true', '1')\n"),
    **{f"pkg/f{i}.py": (f"def check{i}(s):\n    \"True when the string s is yes.\"\n    return s == 'yes'\n\n\n"
                        f"def flag{i}(b):\n    \"A boolean like on.\"\n    return b\n") for i in range(4)},
}


def test_a_plain_words_question_ranks_the_chunk_that_says_most_of_it_first(tmp_path):
    a = ask(tmp_path, PROSE, "convert a string like yes or on to a boolean")
    assert a.kind == "concept" and a.hits[0].path == "pkg/booleans.py", [(h.path, h.symbol) for h in a.hits]


def test_a_usage_question_spreads_over_the_calling_files(searched):
    a = searched("who calls helper")
    top = [h.path for h in a.hits[:4]]
    assert len(set(top)) == 4, top  # the three callers and the definition before any file twice


def test_a_callers_question_answers_with_its_callers_not_its_definition_or_a_comment(searched):
    a = searched("who calls helper")
    assert not a.definitions, a.definitions  # read first, the definition's file pushed a caller down
    top = {h.path for h in a.hits[:3]}
    assert top == {"pkg/user0.py", "pkg/user1.py", "pkg/user2.py"}, [h.path for h in a.hits]


def test_an_identifier_keeps_its_exact_definition_first(searched):
    assert searched("load_in_pieces").definitions[0].name == "load_in_pieces"


def _answer(kind_: str, hits: int) -> dict:
    return {"root": "/w", "kind": kind_, "definitions": [{"name": "retry", "path": "net.py", "line": 3, "kind": "def"}],
            "hits": [{"path": f"f{i}.py", "line": 1, "symbol": "", "lines": [{"line": 1, "text": "x" * 200}] * 3}
                     for i in range(hits)],
            "commits": [{"hash": "a" * 40, "date": "2026-01-01", "subject": "Retry timeout raised to 30 s", "paths": []}]}


def test_a_why_answer_reads_its_commits_first_and_no_cap_cuts_a_whole_section():
    from client.verbs.search import MAX_BYTES, render

    why = render(_answer("why", 2), "why did the retry timeout change", 10)
    assert why.splitlines()[0] == "commits:"
    long = render(_answer("concept", 40), "retry timeout", 10)  # code alone overflows the cap
    assert len(long.encode()) <= MAX_BYTES + 200 and "Retry timeout raised" in long and "definitions:" in long
    assert long.splitlines()[-1].startswith("... more:")


def test_the_best_hits_are_shown_whole_and_a_callers_answer_stays_at_its_call_lines(searched):
    a = searched("load_in_pieces")
    top = a.hits[0]
    assert top.path == "pkg/loader.py" and [n for n, _ in top.lines] == [1, 2, 3, 4, 5], top.lines
    assert all(len(h.lines) <= 3 for h in searched("who calls helper").hits)


def test_a_plain_words_question_meets_its_words_kin_in_code():
    from runner.core.search import concept

    assert [concept.stem(w) for w in ("recursively", "validators", "assigning", "read")] == \
        ["recurs", "validator", "assign", "read"]
    assert concept.match(["recursively", "parse_args"]) == \
        '("recursively" OR "recurs"*) OR ("parse_args" OR ("parse" AND "args"))'
    assert concept.is_prose("turn an instance into a dictionary recursively") and not concept.is_prose("latency histogram")


# A pasted error whose message the source builds from two literals, beside exception classes and
# helpers that share its common words ("attribute", "default", "value"): attrs' _transform_attrs (issue 46).
EXACT = {
    "pkg/errors.py": "".join(f"class {n}(ValueError):\n    '''An attribute value error.'''\n\n\n"
                             for n in ("FrozenAttributeError", "UnannotatedAttributeError", "DefaultValueError")),
    "pkg/make.py": ("class Attribute:\n    '''One attribute of a class.'''\n\n"
                    "    def evolve(self, **changes):\n        return self\n\n\n"
                    "def transform(attrs):\n    had_default = False\n    for a in attrs:\n"
                    "        if had_default and a.default is None:\n            raise ValueError(\n"
                    "                'No mandatory attributes allowed after an attribute with a '\n"
                    "                f'default value or factory.  Attribute in question: {a!r}'\n            )\n"
                    "        had_default = a.default is not None\n"),
    "pkg/funcs.py": "def evolve(inst, **changes):\n    '''A copy of inst with changes.'''\n    return inst\n",
    "pkg/__init__.pyi": "def evolve(inst: object, **changes: object) -> object: ...\n",
    "pkg/api.py": "from pkg.funcs import evolve\n\n__all__ = ['evolve']\n",  # a re-export calls nothing
    "pkg/callers.py": ("def rename(inst, name):\n    \"A copy of inst under another name.\"\n"
                       + "".join(f"    step{i} = inst.step({i})\n" for i in range(12))
                       + "    return evolve(inst, name=name)\n"),
    **{f"pkg/noise{i}.py": "".join(f"def default_value{j}(attribute, value, factory):\n"
                                   f"    '''The default value of an attribute, or its factory.'''\n"
                                   f"    return value or factory()\n\n\n" for j in range(3)) for i in range(4)},
    # Namesakes of a pasted error's qualified names (the stdlib's tarfile.ReadError beside shutil's, and
    # asyncio.run() beside bdb's run): the message's qualifier says which one raised it.
    "pkg/archive.py": ("class ReadError(Exception):\n    '''An archive could not be read.'''\n\n\n"
                       "def run(main):\n    if main is None:\n"
                       "        raise RuntimeError('archive.run() cannot be called from a running loop')\n"
                       "    raise ReadError('file could not be opened successfully')\n"),
    "pkg/shell.py": ("class ReadError(Exception):\n    '''A shell command could not be read.'''\n\n\n"
                     "def run(command):\n    '''Run a command in a shell.'''\n    return command\n"),
    # The type a message says it expected, defined apart from the function that raises it (Python-Markdown's
    # registerExtensions and its Extension class): the raise site is the answer, the class what it is about.
    "pkg/plugins.py": "class Plugin:\n    \"A plugin of the pipeline.\"\n\n    def setup(self):\n        return self\n",
    "pkg/registry.py": ("def register_all(items):\n    for item in items:\n        if not hasattr(item, 'setup'):\n"
                        "            raise TypeError(f'Plugin {item!r} must be of type: pkg.plugins.Plugin')\n"
                        "        item.setup()\n"),
}


@pytest.fixture(scope="module")
def exact(tmp_path_factory):
    with indexed(tmp_path_factory, EXACT, "exact") as ask:
        yield ask


def test_a_pasted_error_finds_the_line_that_raises_it_and_no_namesake_exception_class(exact):
    a = exact("ValueError: No mandatory attributes allowed after an attribute with a default value or factory."
              "  Attribute in question: Attribute(name='y')")
    assert a.kind == "error" and a.hits[0].path == "pkg/make.py", [(h.path, h.symbol) for h in a.hits]
    assert not [d.name for d in a.definitions if d.name.endswith("Error")], a.definitions  # none is named


def test_a_pasted_error_s_qualified_name_answers_with_its_module_and_not_a_namesake(exact):
    for message in ("pkg.archive.ReadError: file could not be opened successfully",
                    "RuntimeError: archive.run() cannot be called from a running loop"):
        a = exact(message)
        assert a.definitions and {d.path for d in a.definitions} == {"pkg/archive.py"}, (message, a.definitions)


def test_an_identifier_defined_in_a_stub_and_a_source_file_answers_with_the_source(exact):
    assert exact("evolve").definitions[0].path == "pkg/funcs.py", exact("evolve").definitions


def test_a_class_qualifier_picks_the_method_of_that_class(exact):
    a = exact("Attribute.evolve")
    assert (a.definitions[0].path, a.definitions[0].line) == ("pkg/make.py", 4), a.definitions


def test_a_callers_question_ranks_the_call_sites_before_the_definition_its_stub_and_a_re_export(exact):
    hits = [h.path for h in exact("who calls evolve").hits]
    assert hits[0] == "pkg/callers.py", hits


def test_a_usage_question_s_target_is_its_identifier_not_its_verb():
    assert kind.usage_target("where is Factory used") == ["Factory"]
    assert kind.usage_target("where is _coerce_version used") == ["_coerce_version"]
    assert kind.usage_target("who raises FrozenInstanceError") == ["FrozenInstanceError"]


def test_a_pasted_error_lists_the_definition_that_raises_it_before_the_class_it_names(exact):
    for message in ('TypeError: Plugin "builtins.dict" must be of type: pkg.plugins.Plugin',
                    "pkg.errors.BadPlugin: Plugin 3 must be of type: pkg.plugins.Plugin"):  # no Error in its name
        a = exact(message)
        assert a.kind == "error" and [(d.name, d.path) for d in a.definitions][:2] == [
            ("register_all", "pkg/registry.py"), ("Plugin", "pkg/plugins.py")], (message, a.definitions)


# The factory a question names written as one word (namedtuple) and a class spelling the same compound in
# parts (NamedTuple): the factory's file says the question, its definition leads (issue 46, stdlib-h46: the
# one-word name was dropped as a single common word and the class's file led the answer).
COMPOUND = {
    "pkg/records.py": ("def namedtuple(typename, field_names):\n    \"Generate the new tuple subclass with named "
                       "fields and its methods.\"\n    methods = {}\n    return type(typename, (tuple,), methods)\n"),
    "pkg/typed.py": "class NamedTuple:\n    \"Typed version of namedtuple: a tuple subclass.\"\n",
    **{f"pkg/other{i}.py": f"def other{i}():\n    return {i}\n" for i in range(3)},
}


def test_a_question_naming_a_one_word_compound_keeps_its_definition(tmp_path):
    a = ask(tmp_path, COMPOUND, "how does namedtuple generate the new tuple subclass and its methods")
    assert a.kind == "concept" and [d.name for d in a.definitions][:1] == ["namedtuple"], a.definitions
