"""The compiled-language rows, their project builders (java's Main, rust's cargo project) and
availability(), against fake programs on a controlled PATH."""

import json
import os
from pathlib import Path

import pytest

from plugkit import languages
from plugkit.languages import cargo as lang_cargo
from plugkit.languages import projects as lang_projects
from plugkit.languages.model import Layout, MissingProgram, ProjectContext, ProjectError, render
from plugkit.languages import lookup, resolve


def fake_program(directory: Path, name: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / name
    exe.write_text(f"#!/bin/sh\necho '{name} 1.0.0'\n")
    exe.chmod(0o755)
    return str(exe)


@pytest.mark.parametrize(("asked", "expected"), [
    ("go", "go"), ("golang", "go"), ("C", "c"), ("cpp", "cpp"), ("c++", "cpp"), ("cxx", "cpp"),
    ("java", "java"), ("rust", "rust"), ("rs", "rust"), ("pwsh", "powershell"), ("ps1", "powershell"),
])
def test_new_rows_answer_to_their_names_and_aliases(asked, expected):
    assert lookup(asked).name == expected


def test_c_falls_back_from_gcc_to_clang_to_cc(tmp_path):
    cc = fake_program(tmp_path, "cc")
    assert resolve(lookup("c"), path=str(tmp_path)).compile[0] == cc
    clang = fake_program(tmp_path, "clang")
    plan = resolve(lookup("c"), path=str(tmp_path))
    assert plan.compile == (clang, "-o", "{out}", "{file}", "-lm") and plan.run == ("{out}",)


def test_go_builds_then_runs_the_binary_from_a_fixed_file_name(tmp_path):
    go = fake_program(tmp_path, "go")
    plan = resolve(lookup("go"), path=str(tmp_path))
    assert plan.compile == (go, "build", "-o", "{out}", "{file}") and plan.run == ("{out}",)
    layout = lang_projects.layout(plan, "package main", ProjectContext(str(tmp_path), str(tmp_path)))
    assert layout.filename == "main.go" and layout.in_dir


def test_java_needs_java_beside_javac_and_fills_in_its_path(tmp_path):
    fake_program(tmp_path, "javac")
    with pytest.raises(MissingProgram) as caught:
        resolve(lookup("java"), path=str(tmp_path))
    assert "java not found" in str(caught.value) and "default-jdk" in str(caught.value)
    java = fake_program(tmp_path, "java")
    assert resolve(lookup("java"), path=str(tmp_path)).run == (java, "-cp", "{dir}", "{main}")


def test_missing_toolchains_name_the_program_and_the_debian_package(tmp_path):
    for lang, words in (("go", ("go (not found)", "golang")), ("c", ("gcc", "clang", "cc", "apt-get install gcc")),
                        ("cpp", ("g++", "apt-get install g++")), ("rust", ("rustc", "rustup")),
                        ("powershell", ("pwsh", "not packaged by Debian"))):
        with pytest.raises(MissingProgram) as caught:
            resolve(lookup(lang), path=str(tmp_path))
        assert all(w in str(caught.value) for w in words), str(caught.value)


def test_rustc_is_also_looked_for_in_the_rustup_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    rustc = fake_program(tmp_path / ".cargo" / "bin", "rustc")
    plan = resolve(lookup("rust"))
    assert plan.compile[0] == rustc and plan.path.endswith(os.path.join(".cargo", "bin"))


# --- java ------------------------------------------------------------------

def java_layout(tmp_path, code: str) -> Layout:
    fake_program(tmp_path, "javac")
    fake_program(tmp_path, "java")
    plan = resolve(lookup("java"), path=str(tmp_path))
    return lang_projects.layout(plan, code, ProjectContext(str(tmp_path), str(tmp_path)))


def test_java_bare_body_is_wrapped_in_main_keeping_imports_and_line_numbers(tmp_path):
    code = "import java.util.*;\n// note\nint x = 1;\nSystem.out.println(x);"
    layout = java_layout(tmp_path, code)
    assert layout.filename == "Main.java" and dict(layout.values) == {"main": "Main"}
    lines = layout.source.split("\n")
    assert lines[:2] == ["import java.util.*;", "// note"]
    assert lines[2].startswith("public class Main {") and lines[2].endswith("int x = 1;")
    assert lines[3] == "System.out.println(x);"


def test_java_with_a_main_method_runs_as_written_from_its_public_class(tmp_path):
    main = "class Main { public static void main(String[] a) {} }"
    assert java_layout(tmp_path, main).source == main
    other = "import x.Y;\npublic final class Hello {\n  public static void main(String[] a) {}\n}\nclass Helper {}"
    layout = java_layout(tmp_path, other)
    assert (layout.filename, dict(layout.values)["main"], layout.source) == ("Hello.java", "Hello", other)
    loose = "class Helper {}\nclass App { static void main(String[] a) {} }"
    assert dict(java_layout(tmp_path, loose).values)["main"] == "Helper"  # first class: javac says if wrong
    assert render(("{main}",), file="f", out="o", dir="d", **dict(layout.values)) == ["Hello"]


def test_java_body_of_only_imports_still_compiles_to_a_class():
    assert lang_projects.wrap_java_body("import a.b;").endswith("public class Main { public static void "
                                                                 "main(String[] args) throws Exception { \n}}\n")


# --- rust / cargo ----------------------------------------------------------

@pytest.fixture
def rust_plan(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    fake_program(tmp_path / "bin", "rustc")
    return resolve(lookup("rust"), path=str(tmp_path / "bin"))


def test_rust_without_directives_is_plain_rustc(rust_plan, tmp_path):
    layout = lang_projects.layout(rust_plan, 'fn main() {}', ProjectContext(str(tmp_path), str(tmp_path)))
    assert layout.compile == rust_plan.compile and layout.filename == "main.rs" and not layout.files


def test_rust_directives_switch_to_an_offline_cargo_project(rust_plan, tmp_path):
    cargo = fake_program(tmp_path / "bin", "cargo")
    (tmp_path / "work" / "greet").mkdir(parents=True)
    (tmp_path / "work" / "greet" / "Cargo.toml").write_text("[package]\n")
    code = '// cargo-dep: serde = { version = "1", features = ["derive"] }\n//cargo-path: greet = "greet"\nfn main() {}'
    layout = lang_projects.layout(rust_plan, code, ProjectContext(str(tmp_path / "home"), str(tmp_path / "work")))
    assert layout.filename == os.path.join("src", "main.rs") and layout.source == code
    assert layout.compile[:3] == (cargo, "build", "--offline") and dict(layout.env)["CARGO_NET_OFFLINE"] == "true"
    values = dict(layout.values)
    assert values["target"].startswith(str(tmp_path / "home" / "cache" / "cargo"))
    manifest = dict(layout.files)["Cargo.toml"]
    assert 'serde = { version = "1", features = ["derive"] }' in manifest
    assert f"greet = {{ path = {json.dumps(str(tmp_path / 'work' / 'greet'))} }}" in manifest
    assert f'name = "{values["main"]}"' in manifest and "[workspace]" in manifest
    assert "offline" in layout.compile_hint
    assert all(values["main"] in pattern for pattern in layout.leftovers)
    import tomllib
    assert tomllib.loads(manifest)["dependencies"]["greet"]["path"] == str(tmp_path / "work" / "greet")


def test_cargo_path_only_has_no_offline_hint_and_each_task_gets_its_own_package(rust_plan, tmp_path):
    fake_program(tmp_path / "bin", "cargo")
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "Cargo.toml").write_text("")
    ctx = ProjectContext(str(tmp_path), str(tmp_path))
    one, two = (lang_projects.layout(rust_plan, '// cargo-path: g = "g"', ctx) for _ in range(2))
    assert one.compile_hint is None
    assert dict(one.values)["target"] == dict(two.values)["target"]
    assert dict(one.values)["main"] != dict(two.values)["main"]


def test_dependency_set_key_ignores_line_order():
    a = [("dep", "rand", '"0.8"'), ("dep", "serde", '"1"')]
    assert lang_cargo.dep_set_key(a) == lang_cargo.dep_set_key(a[::-1])
    assert lang_cargo.dep_set_key(a) != lang_cargo.dep_set_key(a[:1])


@pytest.mark.parametrize(("line", "words"), [
    ("// cargo-dep: rand", ("line 2", "one `name = value`")),
    ('// cargo-dep: a = "1" b = "2"', ("line 2",)),
    ('// cargo-path: g = 5', ("must be a string",)),
    ('// cargo-path: g = "missing"', ("no Cargo.toml",)),
    ('// cargo-dep: "bad name!" = "1"', ("not a crate name",)),
    ('// cargo-dep: rand = "1"\n// cargo-dep: rand = "2"', ("listed twice",)),
])
def test_bad_directives_are_refused_naming_the_line(rust_plan, tmp_path, line, words):
    fake_program(tmp_path / "bin", "cargo")
    with pytest.raises(ProjectError) as caught:
        lang_projects.layout(rust_plan, f"fn main() {{}}\n{line}\n", ProjectContext(str(tmp_path), str(tmp_path)))
    assert all(w in str(caught.value) for w in words), str(caught.value)


def test_directives_without_cargo_say_how_to_get_it(rust_plan, tmp_path):
    with pytest.raises(MissingProgram, match="apt-get install cargo"):
        lang_projects.layout(rust_plan, '// cargo-dep: rand = "0.8"', ProjectContext(str(tmp_path), str(tmp_path)))


# --- availability ----------------------------------------------------------

def test_availability_lists_every_row_with_what_was_found_or_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    gcc = fake_program(tmp_path / "bin", "gcc")
    fake_program(tmp_path / "bin", "rustc")
    report = {name: (usable, detail) for name, usable, detail in languages.availability()}
    assert set(report) == set(languages.names())
    assert report["c"] == (True, gcc)
    assert report["python"][0] is True
    usable, detail = report["go"]
    assert not usable and "golang" in detail and "\n" not in detail
    assert report["rust"][0] and "cargo not found" in report["rust"][1]
