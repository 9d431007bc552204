"""Pure logic of code search: identifiers split and kept whole, files cut at definitions."""

from runner.core.search import chunks, files, tokens


def test_identifiers_split_at_camel_and_snake_case_and_stay_whole():
    assert tokens.parts("getUserName") == ["get", "user", "name"]
    assert tokens.parts("HTTPServerError") == ["http", "server", "error"]
    assert tokens.parts("parse_args") == ["parse", "args"]
    assert tokens.parts("plain") == []
    expanded = tokens.expand("x = parse_args()")
    assert "parse_args" in expanded and expanded.endswith("parse args")


def test_a_prose_query_drops_stopwords_and_matches_whole_or_parts():
    assert tokens.query_words("why did parse_args change") == ["parse_args", "change"]
    assert tokens.fts_query(["parse_args"]) == '("parse_args" OR ("parse" AND "args"))'
    assert tokens.looks_like_identifier("parse_args") and tokens.looks_like_identifier("WorkspaceIndex")
    assert not tokens.looks_like_identifier("how it works")


def test_python_is_cut_at_definitions_and_methods_get_their_own_chunk():
    src = ("import os\n\nLIMIT = 3\n\n\nclass Box:\n    '''A box.'''\n    size = 1\n\n"
           "    def open(self):\n        return os.getcwd()\n\n\n@decor\ndef helper(x):\n    def inner():\n"
           "        pass\n    return x\n")
    cs, ds = chunks.cut("m.py", src)
    by_symbol = {c.symbol: (c.start, c.end) for c in cs}
    assert by_symbol["open"] == (10, 11)
    assert by_symbol["helper"] == (14, 18)  # the decorator belongs to the definition
    assert by_symbol["Box"][0] == 6
    assert {(d.name, d.line) for d in ds} >= {("Box", 6), ("open", 10), ("helper", 15), ("inner", 16)}
    assert any(c.symbol == "" and c.start == 1 for c in cs)  # module-level code in a window


def test_other_languages_get_line_windows_and_pattern_definitions():
    src = "".join(f"// line {i}\n" for i in range(70)) + "export function loadUser(id) {\n}\n"
    cs, ds = chunks.cut("a.ts", src)
    assert [(d.name, d.line) for d in ds] == [("loadUser", 71)]
    assert [c.start for c in cs] == [1, 31, 61] and "loadUser" in cs[-1].symbol
    py2 = chunks.cut("old.py", "print 'hi'\ndef f():\n    pass\n")[1]
    assert [d.name for d in py2] == ["f"]  # unparsable Python falls back to the patterns


def test_tests_and_vendored_code_rank_below_source():
    assert files.kind("src/app.py") == ("source", 1.0)
    assert files.kind("tests/test_app.py")[1] < 1.0
    assert files.kind("pkg/_vendor/six.py")[1] < files.kind("tests/x.py")[1]
