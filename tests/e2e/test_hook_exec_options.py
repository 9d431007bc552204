"""The exec options through `plugkit hook ... --platform P`, as each host calls it (issue 40,
item 11; issue 42, major 6): the hook's exec: read `--sandbox` as code, so
`plugkit exec:bash --sandbox 'cat ~/.ssh/id_rsa'` printed the key and a write outside landed.
Now one table serves the CLI and every hook: the option is honoured, and an option no row
names is refused by name with nothing run."""

import json

import pytest

from tests.support.hook_cli import bash, hook
from tests.support.agent import make_repo
from tests.support.attempts import FAKE_KEY, home_with_a_key

pytestmark = pytest.mark.e2e
# platform -> (event, tool, how the tool input carries the command)
PLATFORMS = {
    "claude-code": ("PreToolUse", "Bash", lambda c: c),
    "qwen": ("PreToolUse", "run_shell_command", lambda c: c),
    "gemini": ("BeforeTool", "run_shell_command", lambda c: c),
    "codex": ("PreToolUse", "Bash", lambda c: ["bash", "-lc", c]),
}


def reason(home, work, platform: str, command: str, **env: str) -> str:
    event, tool, wrap = PLATFORMS[platform]
    data = bash(work, f"opts-{platform}", "", tool)
    data["tool_input"]["command"] = wrap(command)
    done = hook(home, event, data, platform, **env)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    if platform == "gemini":
        assert doc["decision"] == "deny"
        return doc["reason"]
    assert doc["hookSpecificOutput"]["permissionDecision"] == "deny"
    return doc["hookSpecificOutput"]["permissionDecisionReason"]


@pytest.fixture
def ws(tmp_path):
    return make_repo(tmp_path / "ws", 'gates = "advisory"\n')


FORMS = ["plugkit exec:bash --sandbox '{code}'", "exec:bash --sandbox {code}", "exec:bash --sandbox\n{code}"]


# Every form on one host, and the shell's form on every host (the parse is shared; the
# platform decides only how the command arrives).
@pytest.mark.parametrize("platform, form", [("claude-code", f) for f in FORMS]
                         + [(p, FORMS[0]) for p in sorted(PLATFORMS) if p != "claude-code"])
def test_sandbox_from_a_hook_runs_sandboxed(shared_home, ws, tmp_path, platform, form):
    user = home_with_a_key(tmp_path / "user")
    outside = tmp_path / "outside.txt"
    code = f"cat ~/.ssh/id_rsa; touch {outside}; echo inside > inside.txt; echo ran-$((6 * 7))"
    said = reason(shared_home, ws, platform, form.format(code=code), HOME=str(user))
    assert "ran-42" in said, said
    assert FAKE_KEY.strip("-\n") not in said and not outside.exists(), said
    assert (ws / "inside.txt").read_text() == "inside\n"  # its workspace stays writable


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_an_unknown_option_from_a_hook_is_refused_by_name_and_nothing_runs(shared_home, ws, tmp_path, platform):
    marker = tmp_path / "ran.txt"
    for command in (f"plugkit exec:bash --sandbx 'touch {marker}'", f"exec:bash --sandbx touch {marker}"):
        said = reason(shared_home, ws, platform, command)
        assert "was not run: unknown option --sandbx; did you mean --sandbox?" in said, said
    assert not marker.exists()


def test_the_other_options_mean_in_a_hook_what_they_mean_on_the_command_line(shared_home, ws):
    (ws / "sub").mkdir()
    said = reason(shared_home, ws, "claude-code", "exec:bash --cwd sub --timeout 1 --no-stdin\npwd; cat; sleep 30")
    assert f"{ws}/sub" in said and "timed out" in said, said
    refused = reason(shared_home, ws, "claude-code", "exec:bash --session other\ntrue")
    assert "--session is not taken by an exec: a hook runs: a hook's session is the one its host names" in refused
    helped = reason(shared_home, ws, "claude-code", "plugkit exec:python --help")
    assert "--sandbox" in helped and "--detach" in helped
