"""Pasted errors and usage questions in the forms a tool or a person writes them (issue 46, docutils and
werkzeug 3.0.3): a diagnostic line (`doc.rst:3: (WARNING/2) Title underline too short.`) is a pasted
error whose message follows its file, line and level; a builtin exception's message is answered by the
chunk raising that exception, not by a shorter one sharing a run of its words; "where is X called"
asks about X. Indexed for real (SQLite FTS5, no daemon)."""

import pytest

from runner.core.search import exact, kind
from tests.support.search_files import indexed

FILES = {
    # The reporting code: the message spelled once, inside a longer method.
    "pkg/states.py": ("class Body:\n    def section(self, title, underline, lineno):\n"
                      "        source = title + '\\n' + underline\n"
                      "        if len(underline) < len(title):\n"
                      "            self.reporter.warning('Title underline too short.', source=source, line=lineno)\n"
                      "        return self.new_section(title, lineno)\n"),
    # A file about documents and their titles: the diagnostic's file name and level words, none of its message.
    "pkg/doctitle.py": ("class DocTitle:\n    \"\"\"Promote a lone doc title of a rst document (a warning if none).\"\"\"\n"
                        "    def apply(self, doc):\n        doc.title = doc.first_title()  # rst doc title, warning\n"),
    # A short class saying "does not exist", as a 404's description does.
    "pkg/exceptions.py": ("class NotFound(Exception):\n    \"\"\"The resource does not exist.\"\"\"\n"),
    # The raise site: the message's value interpolated, one run of its words shared with NotFound's.
    "pkg/rules.py": ("def get_converter(self, variable_name, converter_name, args, kwargs):\n"
                     "    \"\"\"Looks up the converter for the given parameter.\"\"\"\n"
                     "    if converter_name not in self.map.converters:\n"
                     "        raise LookupError(f\"the converter {converter_name!r} does not exist\")\n"
                     "    return self.map.converters[converter_name](self.map, *args, **kwargs)\n"),
    "pkg/utils.py": "def new_document(source_path, settings=None):\n    return Document(source_path, settings)\n",
    "pkg/reader.py": "from pkg import utils\n\n\ndef read(source):\n    return utils.new_document(source.path)\n",
}


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    with indexed(tmp_path_factory, FILES, "diagnostics") as ask:
        yield ask


def test_a_diagnostic_line_is_a_pasted_error_whose_message_follows_its_location():
    for line in ("doc.rst:3: (WARNING/2) Title underline too short.", "app.py:7:1: error: Name 'x' is not defined"):
        assert kind.classify(line) == "error", line
    assert exact.message_grams("guide.rst:20: (ERROR/3) Unknown target name: \"setup\".") == [
        "unknown target name"]  # "setup" is the value the message was formatted with
    assert kind.classify("how is the title underline checked") == "concept"


def test_a_diagnostic_is_answered_by_the_code_reporting_its_message(searched):
    a = searched("doc.rst:3: (WARNING/2) Title underline too short.")
    assert a.kind == "error" and a.hits[0].path == "pkg/states.py", [(h.path, h.line) for h in a.hits]


def test_a_builtin_exception_s_message_is_answered_by_the_chunk_raising_it(searched):
    a = searched("LookupError: the converter 'uuid4' does not exist")
    assert a.hits[0].path == "pkg/rules.py", [(h.path, h.line) for h in a.hits]
    assert a.definitions[0].name == "get_converter", a.definitions
    assert exact.bare_name("LookupError: the converter 'uuid4' does not exist") == "LookupError"
    assert exact.bare_name("pkg.errors.Bad: no") is None  # a qualified one is raised_name's


def test_where_is_x_called_asks_about_x_and_its_calls(searched):
    assert kind.usage_target("where is utils.new_document called") == ["utils", "new_document"]
    assert kind.usage_target("where is FrozenError raised") == ["FrozenError"]
    a = searched("where is utils.new_document called")
    assert a.hits[0].path == "pkg/reader.py", [(h.path, h.line) for h in a.hits]
