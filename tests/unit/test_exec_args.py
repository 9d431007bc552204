"""One exec option table for the CLI and every hook (client/exec_args.py): each row means the
same in `plugkit exec:<lang>` and in an exec: a hook catches, and a dash-word before the code
that no row names is an error naming it, never code (a hook that made `--sandbox` part of the
code ran `cat ~/.ssh/id_rsa` unconfined)."""

import pytest

from client import exec_args
from client.args import FLAG, Help, UsageError, VALUE
from client.hooks import exec_hook
from client.verbs import exec as exec_verbs

HOOK_TAKES = sorted(name for name, row in exec_args.OPTIONS.items() if not row.not_in_hook)
HOOK_REFUSES = sorted(name for name, row in exec_args.OPTIONS.items() if row.not_in_hook)
VALUES = {"--timeout": "5", "--wait": "2", "--cwd": "sub", "--session": "s", "--file": "f.py", "--name": "web"}


def cli(*argv: str) -> tuple[dict, list[str]]:
    return exec_args.parse_exec(list(argv), exec_verbs.USAGE)


def given(name: str) -> list[str]:
    return [name, VALUES[name]] if exec_args.OPTIONS[name].kind is VALUE else [name]


def test_every_row_is_in_the_usage_and_every_flag_kind_is_known():
    for name, row in exec_args.OPTIONS.items():
        assert f"  {name}" in exec_verbs.USAGE, name
        assert row.kind in (FLAG, VALUE) and row.help
        assert (name in VALUES) == (row.kind is VALUE), f"VALUES lacks a sample for {name}"


@pytest.mark.parametrize("name", [n for n in HOOK_TAKES if n != "--file"])  # --file: below
@pytest.mark.parametrize("form", ["exec:python {opts}\nprint(1)", "exec:python {opts} print(1)",
                                  "plugkit exec:python {opts} 'print(1)'", "plugkit exec:python 'print(1)' {opts}"])
def test_an_option_means_the_same_in_a_hook_as_on_the_command_line(name, form):
    words = given(name)
    opts, code_words = cli(*words, "print(1)")
    request = exec_hook.parse(form.format(opts=" ".join(words)))
    assert request.opts == opts and request.code == "print(1)" == " ".join(code_words)


def test_file_in_a_hook_is_the_code_as_on_the_command_line():
    assert exec_hook.parse("exec:python --file f.py").opts == cli("--file", "f.py")[0] == {"file": "f.py"}
    with pytest.raises(ValueError, match="not both"):
        exec_hook.parse("exec:python --file f.py\nprint(1)")


@pytest.mark.parametrize("command", [
    "plugkit exec:bash --sandbox 'true; cat ~/.ssh/id_rsa'",
    "exec:bash --sandbox true; cat ~/.ssh/id_rsa",
    "exec:bash --sandbox\ntrue; cat ~/.ssh/id_rsa",
    "plugkit exec:bash 'true; cat ~/.ssh/id_rsa' --sandbox",
])
def test_sandbox_from_a_hook_is_the_option_not_code(command):
    request = exec_hook.parse(command)
    assert request.opts.get("sandbox") is True and "--sandbox" not in request.code
    assert request.code.strip().startswith("true;")


@pytest.mark.parametrize("command, named", [
    ("exec:bash --sandbx true; cat ~/.ssh/id_rsa", "unknown option --sandbx; did you mean --sandbox?"),
    ("plugkit exec:bash --sandbx 'cat key'", "unknown option --sandbx; did you mean --sandbox?"),
    ("exec:bash --detached\nsleep 1", "unknown option --detached; did you mean --detach?"),
    ("exec:python -x\nprint(1)", "unknown option -x"),
    ("exec:bash --sandbox; cat key", "unknown option --sandbox;"),
    ("exec:python --stdin --no-stdin\nx", "--stdin or --no-stdin, not both"),
])
def test_an_unknown_option_before_the_code_is_refused_by_name(command, named):
    with pytest.raises(ValueError) as caught:
        exec_hook.parse(command)
    assert named in str(caught.value)
    with pytest.raises(UsageError):  # the CLI says the same of the same words
        cli(*command.split("\n")[0].split()[1 if command.startswith("exec:") else 2:], "x")


@pytest.mark.parametrize("name", HOOK_REFUSES)
def test_an_option_a_hook_cannot_honour_is_refused_saying_why(name):
    with pytest.raises(ValueError, match=f"{name} is not taken by an exec: a hook runs: "):
        exec_hook.parse(f"exec:python {' '.join(given(name))}\nprint(1)")
    cli(*given(name), "print(1)")  # the CLI takes it


@pytest.mark.parametrize("command, code", [
    ("exec:bash -- --version", "--version"),
    ("exec:bash ls --sandbox", "ls --sandbox"),  # after the code, bare exec: text is code as written
    ("exec:python --timeout=5 <<'EOF'\nprint(1)\nEOF", "print(1)"),
    ("exec:bash --cwd 'a dir' echo 'x  y'", "echo 'x  y'"),
])
def test_what_follows_the_options_is_code(command, code):
    assert exec_hook.parse(command).code == code


def test_help_in_a_hook_is_the_usage():
    with pytest.raises(Help):
        exec_hook.parse("exec:python --help")
    with pytest.raises(Help):
        cli("--help")
