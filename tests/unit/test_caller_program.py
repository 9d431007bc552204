"""Which program runs for a caller (plugkit/languages/caller.py): the caller's PATH, its venv's
python, an explicit PLUGKIT_PYTHON; and the bound on the environment a caller sends."""

import os
import sys

import pytest
from pydantic import ValidationError

from plugkit.languages import LanguageError, lookup, resolve
from plugkit.protocol import TaskExecParams
from plugkit.vocab import ENVIRON_MAX_CHARS


def program(path, name: str):
    path.mkdir(parents=True, exist_ok=True)
    exe = path / name
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    return exe


def test_a_venvs_python_beats_the_path_and_the_runners_own(tmp_path):
    venv_python = program(tmp_path / "venv" / "bin", "python")
    program(tmp_path / "bin", "python3")
    plan = resolve(lookup("python"), environ={"PATH": str(tmp_path / "bin"), "VIRTUAL_ENV": str(tmp_path / "venv")})
    assert plan.run[0] == str(venv_python) and plan.source == "$VIRTUAL_ENV"


def test_python3_on_the_callers_path_without_a_venv(tmp_path):
    found = program(tmp_path / "bin", "python3")
    plan = resolve(lookup("python"), environ={"PATH": str(tmp_path / "bin")})
    assert plan.run[0] == str(found) and plan.source == "PATH"


def test_the_runners_own_when_the_caller_has_no_python(tmp_path):
    plan = resolve(lookup("python"), environ={"PATH": str(tmp_path)})
    assert plan.run[0] == sys.executable and plan.source == "the runner's own"


def test_an_explicit_plugkit_python_wins_and_a_missing_one_is_an_error(tmp_path):
    mine = program(tmp_path / "pin", "py")
    program(tmp_path / "venv" / "bin", "python")
    env = {"PATH": "", "VIRTUAL_ENV": str(tmp_path / "venv"), "PLUGKIT_PYTHON": str(mine)}
    assert resolve(lookup("python"), environ=env).run[0] == str(mine)
    with pytest.raises(LanguageError, match="PLUGKIT_PYTHON"):
        resolve(lookup("python"), environ={**env, "PLUGKIT_PYTHON": str(tmp_path / "missing")})


def test_other_languages_are_found_on_the_callers_path_not_ours(tmp_path):
    node = program(tmp_path / "callers-bin", "node")
    assert resolve(lookup("node"), environ={"PATH": str(tmp_path / "callers-bin")}).run[0] == str(node)
    with pytest.raises(LanguageError):
        resolve(lookup("node"), environ={"PATH": str(tmp_path / "empty")})


def test_without_a_caller_environment_the_runners_interpreter_as_before(monkeypatch, tmp_path):
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path))  # the runner's own environment does not count
    assert resolve(lookup("python")).run[0] == sys.executable


def test_the_wire_refuses_an_environment_over_its_bound():
    base = {"session_id": "s", "cwd": "/w", "lang": "bash", "code": "true"}
    assert TaskExecParams(**base, environ={"A": "x" * 1000}).environ == {"A": "x" * 1000}
    with pytest.raises(ValidationError, match="environment is over"):
        TaskExecParams(**base, environ={"A": "x" * ENVIRON_MAX_CHARS})


def test_the_client_sends_its_environment_without_the_token_and_none_when_too_big(monkeypatch):
    from client.wire.session import caller_environ

    monkeypatch.setenv("PLUGKIT_TOKEN", "secret")
    monkeypatch.setenv("MY_VAR", "1")
    sent = caller_environ()
    assert sent is not None and sent["MY_VAR"] == "1" and "PLUGKIT_TOKEN" not in sent
    assert sent["PATH"] == os.environ["PATH"]
    monkeypatch.setenv("HUGE", "x" * ENVIRON_MAX_CHARS)
    assert caller_environ() is None
