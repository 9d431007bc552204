"""The language table: lookup, resolution against a controlled PATH, rendering, and the rows themselves."""

import os
import re
import sys
from pathlib import Path

import pytest

from plugkit import languages
from plugkit.languages import (
    LANGUAGES,
    PLACEHOLDERS,
    LanguageError,
    MissingProgram,
    ResolvedPlan,
    Runner,
    UnknownLanguage,
    lookup,
    names,
    render,
    resolve,
)


def fake_program(directory: Path, name: str, version: str = "1.0.0") -> str:
    exe = directory / name
    exe.write_text(f"#!/bin/sh\necho '{name} {version}'\n")
    exe.chmod(0o755)
    return str(exe)


@pytest.mark.parametrize(
    ("asked", "expected"),
    [
        ("python", "python"),
        ("PY", "python"),
        ("Python3", "python"),
        ("sh", "bash"),
        ("nodejs", "node"),
        ("js", "node"),
        ("TS", "typescript"),
        (" deno ", "deno"),
        ("bun", "bun"),
    ],
)
def test_lookup_accepts_names_and_aliases_in_any_case(asked, expected):
    assert lookup(asked).name == expected


def test_unknown_language_message_lists_every_known_name():
    with pytest.raises(UnknownLanguage) as caught:
        lookup("cobol")
    message = str(caught.value)
    assert "cobol" in message
    for name in names():
        assert name in message
    assert isinstance(caught.value, LanguageError) and isinstance(caught.value, ValueError)


def test_names_are_the_table_rows():
    assert names() == sorted(lang.name for lang in LANGUAGES)
    assert {"bash", "python", "node", "typescript", "deno", "bun"} <= set(names())


def test_missing_program_names_what_was_tried_and_how_to_install(tmp_path):
    with pytest.raises(MissingProgram) as caught:
        resolve(lookup("node"), path=str(tmp_path))
    message = str(caught.value)
    assert "node" in message
    assert lookup("node").install_hint in message
    assert len(message.splitlines()) <= 2
    assert isinstance(caught.value, LanguageError)


def test_python_resolves_to_the_runners_own_interpreter(tmp_path, monkeypatch):
    monkeypatch.setenv("PLUGKIT_PYTHON", str(tmp_path / "ignored"))  # read once at boot, never here
    # An empty PATH proves the interpreter is not looked up by name.
    plan = resolve(lookup("py"), path=str(tmp_path))
    assert plan.run[0] == sys.executable
    assert plan.run[-1] == "{file}"
    assert plan.compile is None


def test_plugkit_python_overrides_the_interpreter(tmp_path):
    other = fake_program(tmp_path, "python-custom")
    assert resolve(lookup("python"), python=other).run[0] == other
    with pytest.raises(MissingProgram, match="PLUGKIT_PYTHON") as caught:
        resolve(lookup("python"), python=str(tmp_path / "missing"))
    assert str(tmp_path) not in str(caught.value)  # the message goes over the wire


@pytest.mark.parametrize(
    ("present", "winner", "args"),
    [
        (("deno", "bun", "tsx"), "deno", ("run", "-A")),
        (("bun", "tsx"), "bun", ("run",)),
        (("tsx", "node"), "tsx", ()),
    ],
)
def test_typescript_prefers_deno_then_bun_then_tsx(tmp_path, present, winner, args):
    for name in present:
        fake_program(tmp_path, name, "99.0.0")
    plan = resolve(lookup("typescript"), path=str(tmp_path))
    assert plan.run == (str(tmp_path / winner), *args, "{file}")


def test_bash_runs_the_static_build_only_beside_the_callers_bash(tmp_path):
    system, own = tmp_path / "system", tmp_path / "own"
    system.mkdir()
    own.mkdir()
    fake_program(system, "bash")
    static = fake_program(system, "bash-static")
    assert resolve(lookup("bash"), path=str(system)).run == (static, "{file}")
    # A bash of the caller's own earlier on PATH is the bash that runs, static build or not.
    mine = fake_program(own, "bash")
    assert resolve(lookup("bash"), path=f"{own}{os.pathsep}{system}").run == (mine, "{file}")
    # The static build alone is not the caller's bash: nothing to run bash with.
    (system / "bash").unlink()
    with pytest.raises(MissingProgram):
        resolve(lookup("bash"), path=str(system))


def test_typescript_falls_back_to_a_new_enough_node(tmp_path):
    node = fake_program(tmp_path, "node", "v22.6.0")
    plan = resolve(lookup("ts"), path=str(tmp_path))
    assert plan.run == (node, "--experimental-strip-types", "--no-warnings", "{file}")


def test_typescript_refuses_an_old_node_and_says_why(tmp_path):
    fake_program(tmp_path, "node", "v22.5.1")
    with pytest.raises(MissingProgram) as caught:
        resolve(lookup("typescript"), path=str(tmp_path))
    message = str(caught.value)
    for tried in ("deno", "bun", "tsx", "node >= 22.6", "22.5.1"):
        assert tried in message
    assert len(message.splitlines()) <= 2


def test_version_probe_runs_once_per_binary(tmp_path):
    marker = tmp_path / "probes"
    exe = tmp_path / "node"
    exe.write_text(f"#!/bin/sh\necho x >> '{marker}'\necho v23.1.0\n")
    exe.chmod(0o755)
    for _ in range(3):
        resolve(lookup("typescript"), path=str(tmp_path))
    assert marker.read_text().count("x") == 1
    # Replacing the binary in place must be noticed.
    exe.write_text(f"#!/bin/sh\necho x >> '{marker}'\necho v20.0.0 is now much older\n")
    os.utime(exe, ns=(0, 0))
    with pytest.raises(MissingProgram, match="20.0.0"):
        resolve(lookup("typescript"), path=str(tmp_path))


def test_render_fills_file_out_and_dir_in_one_pass():
    argv = ("/usr/bin/cc", "-o", "{out}", "{file}", "-I{dir}/include")
    assert render(argv, file="/t/{out}.c", out="/t/a.out", dir="/t") == [
        "/usr/bin/cc",
        "-o",
        "/t/a.out",
        "/t/{out}.c",
        "-I/t/include",
    ]


def test_render_refuses_an_unfilled_program_placeholder():
    with pytest.raises(ValueError, match="program"):
        render(("{program}", "{file}"), file="f", out="o", dir="d")


def test_a_compiled_language_is_just_a_row(tmp_path):
    fake_program(tmp_path, "cc")
    row = languages.Language(
        name="c",
        aliases=(),
        suffix=".c",
        runners=(Runner("cc", ("{out}",), compile=("{program}", "-o", "{out}", "{file}")),),
        install_hint="apt-get install gcc",
    )
    plan = resolve(row, path=str(tmp_path))
    assert plan == ResolvedPlan(row, (str(tmp_path / "cc"), "-o", "{out}", "{file}"), ("{out}",))


@pytest.mark.parametrize(
    ("run", "compile"),
    [
        (("{program}", "{source}"), None),
        ((), None),
        (("{out}",), None),  # nothing would have produced {out}
    ],
)
def test_malformed_rows_are_refused_at_definition(run, compile):
    with pytest.raises(ValueError):
        Runner("x", run, compile=compile)


@pytest.mark.parametrize("lang", LANGUAGES, ids=lambda lang: lang.name)
def test_every_row_is_well_formed(lang):
    assert lang.name == lang.name.lower() and lang.name
    assert lang.suffix.startswith(".") and len(lang.suffix) > 1
    assert lang.runners
    assert lang.install_hint and "\n" not in lang.install_hint
    for runner in lang.runners:
        assert runner.program
        # Each step starts with a program resolve() checked: the row's, one it needs, or the compiled {out}.
        starts = {"{program}", *runner.needs} | ({"{out}"} if runner.compile else set())
        assert runner.run[0] in starts
        assert runner.compile is None or runner.compile[0] == "{program}"
        assert any("{file}" in arg for arg in runner.run + (runner.compile or ()))
        for arg in runner.run + (runner.compile or ()):
            assert set(re.findall(r"\{(\w+)\}", arg)) <= PLACEHOLDERS


def test_no_name_or_alias_is_claimed_twice():
    keys = [key.lower() for lang in LANGUAGES for key in (lang.name, *lang.aliases)]
    assert len(keys) == len(set(keys))
