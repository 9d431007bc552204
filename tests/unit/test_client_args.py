"""The shim's tiny argument parser, its number and task-id readers, and session defaults."""

import os

import pytest

from client.args import FLAG, VALUE, Help, UsageError, number, parse, task_id
from client.wire.session import Caller, _quote, default_session

EXEC = {"--cwd": VALUE, "--json": FLAG, "--timeout": VALUE}


def test_values_flags_and_positionals_in_any_order():
    opts, pos = parse(["--json", "echo hi", "--timeout=3", "--cwd", "/x"], EXEC, loose=True)
    assert opts == {"json": True, "timeout": "3", "cwd": "/x"}
    assert pos == ["echo hi"]


def test_loose_verbs_keep_unknown_dash_words_after_the_code_starts():
    opts, pos = parse(["ls", "-la", "--color=auto", "--json"], EXEC, loose=True)
    assert pos == ["ls", "-la", "--color=auto"] and opts == {"json": True}


def test_unknown_option_before_any_positional_is_a_typo():
    with pytest.raises(UsageError, match="unknown option --tiemout"):
        parse(["--tiemout", "3", "true"], EXEC, loose=True)


def test_strict_verbs_reject_unknown_options_anywhere():
    with pytest.raises(UsageError, match="unknown option -x"):
        parse(["task_1", "-x"], EXEC)


def test_double_dash_ends_options_and_lone_dash_is_positional():
    opts, pos = parse(["--json", "--", "--timeout", "5"], EXEC, loose=True)
    assert opts == {"json": True} and pos == ["--timeout", "5"]
    assert parse(["-"], EXEC)[1] == ["-"]


def test_help_only_before_the_code():
    with pytest.raises(Help):
        parse(["--help"], EXEC, loose=True)
    assert parse(["ls", "--help"], EXEC, loose=True)[1] == ["ls", "--help"]


@pytest.mark.parametrize("argv, message", [
    (["--cwd"], "--cwd needs a value"),
    (["--json=yes"], "--json takes no value"),
])
def test_malformed_options(argv, message):
    with pytest.raises(UsageError, match=message):
        parse(argv, EXEC)


def test_positional_counts_are_enforced_with_the_usage():
    with pytest.raises(UsageError, match="usage: x"):
        parse([], EXEC, min_pos=1, usage="usage: x")
    with pytest.raises(UsageError):
        parse(["a", "b"], EXEC, max_pos=1)


def test_numbers_come_from_the_flag_then_the_environment(monkeypatch):
    monkeypatch.setenv("PLUGKIT_WAIT", "7")
    assert number({"wait": "2.5"}, "wait", "--wait", 15, env="PLUGKIT_WAIT") == 2.5
    assert number({}, "wait", "--wait", 15, env="PLUGKIT_WAIT") == 7
    monkeypatch.delenv("PLUGKIT_WAIT")
    assert number({}, "wait", "--wait", 15, env="PLUGKIT_WAIT") == 15


@pytest.mark.parametrize("raw", ["abc", "-1", "nan", "inf"])
def test_bad_numbers_name_their_source(raw):
    with pytest.raises(UsageError, match="--wait"):
        number({"wait": raw}, "wait", "--wait", 15)


@pytest.mark.parametrize("word, expected", [("task_7", 7), ("7", 7), ("task_0", 0)])
def test_task_ids_in_both_forms(word, expected):
    assert task_id(word) == expected


@pytest.mark.parametrize("word", ["task_", "task_x", "-1", "７", "abc", ""])
def test_bad_task_ids_are_usage_errors(word):
    with pytest.raises(UsageError, match="task_N or N"):
        task_id(word)


def test_default_session_is_stable_per_directory_and_follows_symlinks(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert default_session(str(real)) == default_session(str(tmp_path / "link"))
    assert default_session(str(real)) != default_session(str(tmp_path))
    assert default_session(str(real)).startswith("cwd-")


def test_session_comes_from_the_flag_then_the_environment(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLUGKIT_SESSION", "from-env")
    assert Caller({"session": "flag"}).session_id == "flag"
    assert Caller({}).session_id == "from-env"
    monkeypatch.delenv("PLUGKIT_SESSION")
    assert Caller({}).session_id == default_session(str(tmp_path))


def test_relative_cwd_is_resolved_against_the_callers_directory(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert Caller({"cwd": "sub"}).cwd == os.path.join(str(tmp_path), "sub")


def test_follow_up_commands_carry_only_the_flags_the_user_gave(tmp_path):
    me = Caller({"session": "my s", "cwd": str(tmp_path)})
    assert me.command("exec:status", "task_3") == (
        f"plugkit exec:status task_3 --session 'my s' --cwd {_quote(str(tmp_path))}")


@pytest.mark.parametrize("word", ["plain", "a b", "it's", "", "é", "$(rm -rf ~)"])
def test_quote_matches_shlex(word):
    import shlex

    assert _quote(word) == shlex.quote(word)
