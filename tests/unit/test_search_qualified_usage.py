"""A callers' question that writes its target with its module ("who calls globs.translate") is answered
by the calls of that module's function first (issue 46, stdlib-h46: `s.translate(table)` of str led the
callers of fnmatch.translate). Indexed for real (SQLite FTS5, no daemon)."""

import pytest

from runner.core.search import exact
from tests.support.search_files import indexed

FILES = {
    "pkg/globs.py": "def translate(pat):\n    \"A glob as a regular expression.\"\n    return pat\n",
    "pkg/paths.py": ("import re\n\nfrom pkg import globs\n\n\ndef match(path, pattern):\n    \"Does a path match?\"\n"
                     + "".join(f"    part{i} = path.split('/')[{i}]\n" for i in range(20))
                     + "    return re.match(globs.translate(pattern), path)\n"),
    "pkg/lists.py": ("from pkg.globs import translate\n\n\ndef include(names, pattern):\n"
                     + "".join(f"    names{i} = sorted(names)[{i}:]\n" for i in range(20))
                     + "    return [n for n in names if translate(pattern) == n]\n"),
    # str.translate, named more often and in shorter chunks: no caller of globs.translate.
    **{f"pkg/text{i}.py": "".join(f"def clean{j}(s, table):\n    return s.translate(table).translate(table)\n\n\n"
                                  for j in range(3)) for i in range(4)},
}


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    with indexed(tmp_path_factory, FILES, "usage") as ask:
        yield ask


def test_a_qualified_target_s_callers_come_before_a_namesake_method_s(searched):
    a = searched("who calls globs.translate")
    assert a.kind == "usage" and {h.path for h in a.hits[:2]} == {"pkg/paths.py", "pkg/lists.py"}, \
        [(h.path, h.line) for h in a.hits]


def test_a_bare_target_keeps_every_call_site():
    assert exact.qualifier_of("who calls translate", "translate") is None
    assert exact.qualifier_of("who calls pkg.globs.translate", "translate") == "globs"
    assert exact.qualifier_of("where is os.path.join used", "join") == "path"
