"""Workspace language plugins (.plugkit/lang/*.toml): parsing, precedence over the built-in
table, clear reports for broken files, and re-reading on change."""

from pathlib import Path

import pytest

from plugkit import languages
from plugkit.languages import plugins as lang_plugins
from plugkit.languages.model import PluginError, UnknownLanguage
from plugkit.languages import lookup, resolve


def plugin(ws: Path, stem: str, body: str) -> Path:
    path = ws / ".plugkit" / "lang" / f"{stem}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path


def test_a_plugin_row_has_the_built_in_shape(tmp_path):
    plugin(tmp_path, "awk", 'name = "awk"\naliases = ["gawk"]\nsuffix = ".awk"\nrun = "awk -f {file}"\n'
                            'install_hint = "apt-get install gawk"\n')
    row = lookup("GAWK", workspace=str(tmp_path))
    assert (row.name, row.aliases, row.suffix, row.origin) == ("awk", ("gawk",), ".awk", ".plugkit/lang/awk.toml")
    (runner,) = row.runners
    assert (runner.program, runner.run, runner.compile) == ("awk", ("{program}", "-f", "{file}"), None)
    assert resolve(row).run[0].endswith("/awk")


def test_name_defaults_to_the_stem_and_program_to_the_first_word(tmp_path):
    plugin(tmp_path, "tinyc", 'compile = ["gcc", "-o", "{out}", "{file}"]\nrun = ["{out}"]\nsuffix = ".c"\n')
    row = lookup("tinyc", workspace=str(tmp_path))
    assert row.runners[0].program == "gcc" and row.runners[0].compile[0] == "{program}"


def test_workspace_is_the_nearest_ancestor_holding_a_marker(tmp_path):
    plugin(tmp_path, "awk", 'run = ["awk", "-f", "{file}"]\n')
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert lookup("awk", workspace=str(deep)).origin == ".plugkit/lang/awk.toml"
    (tmp_path / "a" / ".plugkit").mkdir()  # a bare .plugkit/ is not a workspace (screenshots make one)
    assert lookup("awk", workspace=str(deep)).origin == ".plugkit/lang/awk.toml"
    (tmp_path / "a" / ".git").mkdir()  # a nearer workspace without plugins hides the outer one
    with pytest.raises(UnknownLanguage):
        lookup("awk", workspace=str(deep))


def test_a_relative_program_is_found_in_the_workspace(tmp_path):
    tool = tmp_path / "tools" / "interp"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    plugin(tmp_path, "mine", 'run = ["./tools/interp", "{file}"]\n')
    assert resolve(lookup("mine", workspace=str(tmp_path))).run == (str(tool), "{file}")


def test_a_plugin_overrides_a_built_in_by_name_only(tmp_path):
    plugin(tmp_path, "python", 'run = ["bash", "{file}"]\n')
    assert lookup("python", workspace=str(tmp_path)).origin == ".plugkit/lang/python.toml"
    assert lookup("py", workspace=str(tmp_path)) is lookup("py")
    assert lookup("python") is lookup("py")  # no workspace: the built-in table alone


@pytest.mark.parametrize(("body", "words"), [
    ('run = ["awk"', ("not valid TOML",)),
    ('run = 5', ("run", "list of non-empty strings")),
    ('suffix = ".x"', ("run: missing",)),
    ('run = ["awk", "{source}"]', ("unknown placeholder {source}", "{file}")),
    ('run = ["awk", "{main}"]', ("unknown placeholder {main}",)),
    ('run = ["{file}"]', ("must start with a program",)),
    ('run = ["{out}"]', ("program: missing",)),
    ('run = ["{program}", "{file}"]', ("program: missing",)),
    ('program = "gawk"\nrun = ["awk", "{file}"]', ("'gawk' is not used",)),
    ('run = ["awk", "{out}"]', ("no compile step",)),
    ('run = ["awk"]\ncolour = "red"', ("unknown key(s) colour",)),
    ('name = "Bad Name"\nrun = ["awk"]', ("name 'bad name'",)),
    ('run = ["awk"]\nsuffix = "awk"', ("suffix",)),
    ('run = ["awk"]\nfilename = "../x"', ("filename",)),
    ('run = "awk \'unclosed"', ("cannot split",)),
    ('run = ["awk"]\naliases = "a"', ("aliases",)),
])
def test_invalid_files_are_reported_with_the_file_and_the_problem(tmp_path, body, words):
    plugin(tmp_path, "bad", body + "\n")
    (problem,) = lang_plugins.check_plugins(str(tmp_path))
    assert problem.startswith(".plugkit/lang/bad.toml: ")
    assert all(w in problem for w in words), problem
    with pytest.raises(PluginError) as caught:
        lookup("bad", workspace=str(tmp_path))
    assert problem in str(caught.value)


def test_a_broken_file_fails_only_the_names_it_claims(tmp_path):
    plugin(tmp_path, "awk", 'run = ["awk", "-f", "{file}"]\n')
    plugin(tmp_path, "override", 'name = "python"\naliases = ["snake"]\nrun = 1\n')
    ws = str(tmp_path)
    for claimed in ("override", "python", "snake"):
        with pytest.raises(PluginError, match="override.toml"):
            lookup(claimed, workspace=ws)
    assert lookup("awk", workspace=ws).origin and lookup("py", workspace=ws).name == "python"
    assert lookup("bash", workspace=ws) is lookup("bash")
    with pytest.raises(UnknownLanguage, match="invalid plugin files: .plugkit/lang/override.toml"):
        lookup("cobol", workspace=ws)


def test_the_first_file_to_claim_a_name_wins_and_the_later_one_is_reported(tmp_path):
    plugin(tmp_path, "a", 'name = "tool"\nrun = ["awk"]\n')
    plugin(tmp_path, "b", 'name = "other"\naliases = ["tool"]\nrun = ["sed"]\n')
    assert lookup("tool", workspace=str(tmp_path)).origin == ".plugkit/lang/a.toml"
    assert lang_plugins.check_plugins(str(tmp_path)) == [
        ".plugkit/lang/b.toml: name 'tool' is already defined by .plugkit/lang/a.toml"]
    with pytest.raises(PluginError, match="b.toml"):
        lookup("other", workspace=str(tmp_path))


def test_files_are_reread_when_added_changed_or_removed(tmp_path):
    ws = str(tmp_path)
    assert lang_plugins.check_plugins(ws) == [] and lang_plugins.plugins_for(ws) is None
    path = plugin(tmp_path, "awk", 'run = ["awk", "-f", "{file}"]\n')
    assert lookup("awk", workspace=ws).runners[0].run == ("{program}", "-f", "{file}")
    path.write_text('run = ["awk", "-v", "x=1", "-f", "{file}"]\n')
    assert lookup("awk", workspace=ws).runners[0].run[1:3] == ("-v", "x=1")
    path.write_text("run = 3\n")
    assert lang_plugins.check_plugins(ws)
    path.unlink()
    assert lang_plugins.check_plugins(ws) == []
    with pytest.raises(UnknownLanguage):
        lookup("awk", workspace=ws)


def test_unchanged_files_are_not_parsed_again(tmp_path, monkeypatch):
    plugin(tmp_path, "awk", 'run = ["awk", "-f", "{file}"]\n')
    first = lookup("awk", workspace=str(tmp_path))
    monkeypatch.setattr(lang_plugins, "_parse", lambda *a: pytest.fail("parsed again"))
    assert lookup("awk", workspace=str(tmp_path)) is first


def test_hidden_and_non_toml_files_are_ignored(tmp_path):
    plugin(tmp_path, ".#awk", "garbage = [")
    (tmp_path / ".plugkit" / "lang" / "README.md").write_text("notes")
    assert lang_plugins.check_plugins(str(tmp_path)) == []


def test_availability_includes_plugins_and_their_problems(tmp_path):
    plugin(tmp_path, "awk", 'run = ["awk", "-f", "{file}"]\n')
    plugin(tmp_path, "nothere", 'run = ["surely-not-a-program-xyz", "{file}"]\n')
    plugin(tmp_path, "python", "run = 1\n")
    report = {name: (usable, detail) for name, usable, detail in languages.availability(str(tmp_path))}
    assert report["awk"][0] and "(from .plugkit/lang/awk.toml)" in report["awk"][1]
    assert report["nothere"][0] is False and "fix .plugkit/lang/nothere.toml" in report["nothere"][1]
    assert report["python"][0] is False and "python.toml" in report["python"][1]
    assert report["bash"][0]  # built-ins are still listed beside the plugins

