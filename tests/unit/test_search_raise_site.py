"""A pasted error is answered by the code that raises it (issue 46, rich 13.7.1): among the chunks that
spell runs of the message's words, a raise site of the exception the message names with its module
leads, the one spelling most of the message first, and a long function's later window answers with
that function's own definition. Indexed for real (SQLite FTS5, no daemon)."""

import pytest

from runner.core.search import exact
from runner.core.search.chunks import MAX_CHUNK
from tests.support.search_files import indexed

FILLER = "".join(f"    step{i} = prepare(r, {i})\n" for i in range(MAX_CHUNK + 60))  # a long second window
FILES = {
    "pkg/errors.py": ("class RenderError(Exception):\n    \"Something could not be rendered.\"\n\n\n"
                      "class StyleError(Exception):\n    \"A style could not be parsed.\"\n"),
    # A short sibling raising a like message: FTS5's bm25 ranks it above the long raise site.
    "pkg/measure.py": ("from pkg import errors\n\n\ndef width(r):\n    if r is None:\n        raise errors.RenderError(\n"
                       "            f\"Unable to get a width for {r!r}; a str or an object with a render method is required\")\n"
                       "    return 1\n"),
    # The raise site, in the second window of a long function.
    "pkg/console.py": ("from pkg import errors\n\n\ndef render(r):\n" + FILLER
                       + "    if not hasattr(r, 'render'):\n        raise errors.RenderError(\n"
                         "            f\"Unable to render {r!r}; \"\n"
                         "            \"a str or an object with a render method is required\")\n    return r.render()\n"),
    # The helper whose own error the raise site wraps spells more of the message than the raise site does.
    "pkg/colors.py": ("class ColorError(Exception):\n    pass\n\n\ndef parse_color(s):\n"
                      "    raise ColorError(f\"{s!r} is not a valid color\")\n"),
    "pkg/style.py": ("from pkg import errors\nfrom pkg.colors import ColorError, parse_color\n\n\n"
                     "def parse_style(s):\n    try:\n        return parse_color(s)\n    except ColorError as error:\n"
                     "        raise errors.StyleError(f\"unable to parse {s!r} as color; {error}\") from None\n"),
}


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    with indexed(tmp_path_factory, FILES, "raise") as ask:
        yield ask


def test_the_raise_site_spelling_most_of_the_message_leads_with_its_long_function(searched):
    a = searched("pkg.errors.RenderError: Unable to render 42; a str or an object with a render method is required")
    assert a.kind == "error" and a.hits[0].path == "pkg/console.py", [(h.path, h.line) for h in a.hits]
    assert a.hits[0].line > MAX_CHUNK  # its second window, where the raise is
    assert (a.definitions[0].name, a.definitions[0].path) == ("render", "pkg/console.py"), a.definitions


def test_the_site_raising_the_named_exception_leads_the_helper_whose_error_it_wraps(searched):
    a = searched("pkg.errors.StyleError: unable to parse 'blurple' as color; 'blurple' is not a valid color")
    assert a.hits[0].path == "pkg/style.py", [(h.path, h.line) for h in a.hits]
    assert a.definitions[0].name == "parse_style", a.definitions


def test_only_a_name_written_with_its_module_is_the_raised_exception():
    assert exact.raised_name("rich.errors.MarkupError: closing tag '[/bold]'") == "MarkupError"
    assert exact.raised_name("Traceback (most recent call last):\n  File \"x.py\", line 3\npkg.mod.Bad: no") == "Bad"
    assert exact.raised_name("ValueError: Cannot parse bool value: 'maybe'") is None  # many chunks name a builtin
    assert exact.raised_name("Error: No such option: --colour") is None  # click's prefix, no class
