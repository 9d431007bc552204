"""argparse's errors said plainly, with a suggestion (issue 42: "did you mean" everywhere, no
`invalid choice` jargon, no usage dump), through the real verbs' parsers."""

import subprocess

import pytest

from tests.support.runner_home import cli_argv


@pytest.mark.parametrize("argv, said", [
    (["gate", "advanc"], "plugkit gate: unknown gate verb 'advanc'; did you mean advance?"),
    (["runner", "stat"], "plugkit runner: unknown runner verb 'stat'; did you mean start?"),
    (["work", "statu"], "plugkit work: unexpected 'statu'; did you mean status?"),
    (["work", "--workr", "x"], "plugkit work: unknown option --workr; did you mean --worker?"),
    (["work", "--worker", "claud"], "--worker: 'claud' is not one of claude-code, qwen, gemini, codex, command; "
                                    "did you mean claude-code?"),
    (["gate", "status", "--jsn"], "plugkit gate: unknown option --jsn; did you mean --json?"),
    (["install", "--platform", "claud"], "unknown platform 'claud'; did you mean claude-code?"),
    (["hook", "Stop", "--platform", "gemni"], "unknown platform 'gemni'; did you mean gemini?"),
])
def test_a_usage_error_is_one_plain_line_with_a_suggestion(home, tmp_path, argv, said):
    done = subprocess.run(cli_argv() + argv, env=home.env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    # A hook never exits 2 (a host reads 2 as "block"): its usage errors exit 1.
    assert done.returncode == (1 if argv[0] == "hook" else 2), done.stderr
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "invalid choice" not in done.stderr and "usage:" not in done.stderr
