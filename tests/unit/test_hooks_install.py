"""`plugkit install`: merged, idempotent, reversible hook configuration for each platform,
through the real command on temp settings files (--project in a temp cwd, --user with a temp HOME)."""

import json
import os
import shlex
import subprocess
import tomllib

import pytest

from client.hooks import install
from tests.support.runner_home import ROOT, cli_argv

FIXTURES = ROOT / "tests" / "fixtures" / "hooks"


def run(home, cwd, *args: str, user_home=None) -> subprocess.CompletedProcess:
    env = dict(home.env, HOME=str(user_home or cwd))
    return subprocess.run(cli_argv() + ["install", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60)


def commands(settings: dict) -> list[str]:
    return [h["command"] for groups in settings["hooks"].values() if isinstance(groups, list)
            for g in groups for h in g["hooks"]]


def assert_absolute_script(command: str) -> None:
    words = shlex.split(command)
    assert os.path.isabs(words[0]) and os.path.isfile(words[0]) and os.access(words[0], os.X_OK), command
    # The interpreter by path, without site, running the entry file by path (install_command.py).
    assert words[1] == "-S" and os.path.isabs(words[2]) and os.path.isfile(words[2]) and words[3] == "hook", command


USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": []},
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/audit.sh"}]}],
              "Notification": [{"hooks": [{"type": "command", "command": "notify-send claude"}]}]},
}


# Claude Code's command-hook timeouts are seconds; Qwen Code's are milliseconds (its HookRunner
# multiplies nothing: 10 there was 10 ms, found by tests/hosts in the real qwen).
@pytest.mark.parametrize("platform, file, unit", [("claude-code", ".claude/settings.local.json", 1),
                                                 ("qwen", ".qwen/settings.json", 1000)])
def test_claude_style_round_trip_keeps_everything_else(home, tmp_path, platform, file, unit):
    path = tmp_path / file
    path.parent.mkdir()
    path.write_text(json.dumps(USER_SETTINGS))
    first = run(home, tmp_path, "--platform", platform)
    assert first.returncode == 0, first.stderr
    settings = json.loads(path.read_text())
    assert settings["model"] == "opus" and settings["permissions"] == USER_SETTINGS["permissions"]
    ours = [c for c in commands(settings) if install.is_ours(c)]
    assert len(ours) == 5 and "~/bin/audit.sh" in commands(settings) and "notify-send claude" in commands(settings)
    for command in ours:
        assert_absolute_script(command)
        assert command.endswith(f"--platform {platform}")
    pre = settings["hooks"]["PreToolUse"][-1]
    shell, write = {"claude-code": ("Bash", "Write"), "qwen": ("run_shell_command", "edit")}[platform]
    assert shell in pre["matcher"].split("|") and write in pre["matcher"].split("|")
    timeouts = [h["timeout"] for g in settings["hooks"].values() for grp in g for h in grp["hooks"] if "timeout" in h]
    assert timeouts and all(isinstance(t, int) and 10 * unit <= t <= 60 * unit for t in timeouts)
    written = path.read_bytes()
    again = run(home, tmp_path, "--platform", platform)
    assert again.returncode == 0 and "already up to date" in again.stdout and path.read_bytes() == written
    gone = run(home, tmp_path, "--platform", platform, "--uninstall")
    assert gone.returncode == 0 and "removed 5" in gone.stdout
    assert json.loads(path.read_text()) == USER_SETTINGS


def test_installed_command_runs_and_answers(home, tmp_path):
    assert run(home, tmp_path, "--platform", "claude-code").returncode == 0
    settings = json.loads((tmp_path / ".claude" / "settings.local.json").read_text())
    command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    # PYTHONPROFILEIMPORTTIME: the interpreter names every module it imports on stderr.
    result = subprocess.run(command, shell=True, input=(FIXTURES / "claude-code" / "Stop.json").read_bytes(),
                            capture_output=True, env=dict(home.env, PYTHONPROFILEIMPORTTIME="1"), timeout=30)
    assert (result.returncode, result.stdout) == (0, b"")  # no runner: fails open
    imported = {line.rpartition(b"|")[2].strip() for line in result.stderr.splitlines() if b"import time:" in line}
    # The hook answered, and its interpreter skipped site: the venv's .pth files, pyvenv.cfg and
    # setuptools' distutils shim cost ~7 ms CPU of each hook process, on every tool call.
    assert b"client.hooks.core" in imported and b"site" not in imported and b"_distutils_hack" not in imported


def test_gemini_user_install_uses_milliseconds_and_its_event_names(home, tmp_path):
    user = tmp_path / "userhome"
    (user / ".gemini").mkdir(parents=True)
    original = {"theme": "dark", "hooks": {"enabled": True}}
    (user / ".gemini" / "settings.json").write_text(json.dumps(original))
    work = tmp_path / "work"
    work.mkdir()
    assert run(home, work, "--platform", "gemini", "--user", user_home=user).returncode == 0
    settings = json.loads((user / ".gemini" / "settings.json").read_text())
    assert settings["theme"] == "dark" and settings["hooks"]["enabled"] is True
    assert set(settings["hooks"]) == {"enabled", "SessionStart", "BeforeAgent", "BeforeTool", "AfterAgent",
                                      "SessionEnd"}
    matcher = settings["hooks"]["BeforeTool"][0]["matcher"]
    assert set(matcher.split("|")) == {"run_shell_command", "write_file", "replace"}
    hooks = [h for e, g in settings["hooks"].items() if e != "enabled" for grp in g for h in grp["hooks"]]
    assert all(h["timeout"] >= 10_000 and h["name"].startswith("plugkit-") for h in hooks)  # milliseconds
    assert not (work / ".gemini").exists()
    assert run(home, work, "--platform", "gemini", "--user", "--uninstall", user_home=user).returncode == 0
    assert json.loads((user / ".gemini" / "settings.json").read_text()) == original


CODEX_CONFIG = '''model = "gpt-5-codex"
approval_policy = "on-request"

[[hooks.Stop]]
[[hooks.Stop.hooks]]
type = "command"
command = "/usr/local/bin/my-stop-check"

[profiles.fast]
model = "gpt-5-mini"
'''


def test_codex_toml_block_parses_back_and_uninstalls_byte_for_byte(home, tmp_path):
    user = tmp_path / "userhome"
    (user / ".codex").mkdir(parents=True)
    path = user / ".codex" / "config.toml"
    path.write_text(CODEX_CONFIG)
    installed = run(home, tmp_path, "--platform", "codex", "--user", user_home=user)
    # Codex skips untrusted hooks without a word: the install says what the person must do.
    assert installed.returncode == 0 and "/hooks" in installed.stdout and "trusted project" in installed.stdout
    config = tomllib.loads(path.read_text())
    assert config["model"] == "gpt-5-codex" and config["profiles"]["fast"]["model"] == "gpt-5-mini"
    assert [g["hooks"][0]["command"] for g in config["hooks"]["Stop"]][0] == "/usr/local/bin/my-stop-check"
    pre = config["hooks"]["PreToolUse"]
    assert pre[0]["matcher"] == "Bash|apply_patch"
    hook = pre[0]["hooks"][0]
    assert hook["type"] == "command" and hook["timeout"] == 60 and hook["command"].endswith("PreToolUse --platform codex")
    assert_absolute_script(hook["command"])
    once = path.read_bytes()
    assert run(home, tmp_path, "--platform", "codex", "--user", user_home=user).returncode == 0
    assert path.read_bytes() == once
    assert run(home, tmp_path, "--platform", "codex", "--user", "--uninstall", user_home=user).returncode == 0
    assert path.read_text() == CODEX_CONFIG


def test_codex_config_it_cannot_merge_is_left_alone(home, tmp_path):
    path = tmp_path / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('hooks = { PreToolUse = [] }\n')
    result = run(home, tmp_path, "--platform", "codex")
    assert result.returncode == 1 and "cannot add to" in result.stderr
    assert path.read_text() == 'hooks = { PreToolUse = [] }\n'


def test_print_shows_and_writes_nothing(home, tmp_path):
    result = run(home, tmp_path, "--platform", "claude-code", "--print")
    assert result.returncode == 0 and not (tmp_path / ".claude").exists()
    assert "nothing was written" in result.stderr
    header, body = result.stdout.split("\n", 1)
    assert header == f"# {tmp_path}/.claude/settings.local.json"
    assert len([c for c in commands(json.loads(body)) if install.is_ours(c)]) == 5


def test_project_install_writes_the_personal_file_and_leaves_the_committed_one(home, tmp_path):
    shared = tmp_path / ".claude" / "settings.json"
    shared.parent.mkdir()
    shared.write_text('{"model": "opus"}\n')
    done = run(home, tmp_path, "--platform", "claude-code")
    assert done.returncode == 0, done.stderr
    assert shared.read_text() == '{"model": "opus"}\n'  # a teammate's checkout never gets this machine's hooks
    personal = json.loads((tmp_path / ".claude" / "settings.local.json").read_text())
    assert len([c for c in commands(personal) if install.is_ours(c)]) == 5
    assert "plugkit install --platform claude-code --uninstall" in done.stdout  # the way back, named


def test_uninstall_removes_what_install_created(home, tmp_path):
    assert run(home, tmp_path, "--platform", "gemini").returncode == 0
    assert run(home, tmp_path, "--platform", "claude-code").returncode == 0
    assert (tmp_path / ".gemini" / "settings.json").exists() and (tmp_path / ".claude").is_dir()
    for platform in ("gemini", "claude-code"):
        gone = run(home, tmp_path, "--platform", platform, "--uninstall")
        assert gone.returncode == 0 and "removed 5" in gone.stdout, gone.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # the files and the dirs made for them


def test_uninstall_also_clears_hooks_an_older_install_put_in_the_shared_file(home, tmp_path):
    shared = tmp_path / ".claude" / "settings.json"
    assert run(home, tmp_path, "--platform", "claude-code").returncode == 0
    (tmp_path / ".claude" / "settings.local.json").rename(shared)
    settings = json.loads(shared.read_text())
    shared.write_text(json.dumps({**settings, "model": "opus"}))
    gone = run(home, tmp_path, "--platform", "claude-code", "--uninstall")
    assert gone.returncode == 0 and "removed 5" in gone.stdout
    assert json.loads(shared.read_text()) == {"model": "opus"}


def test_invalid_settings_are_never_overwritten(home, tmp_path):
    path = tmp_path / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_text("{not json")
    result = run(home, tmp_path, "--platform", "claude-code")
    assert result.returncode == 1 and "not valid JSON" in result.stderr and path.read_text() == "{not json"


@pytest.mark.parametrize("args, said", [([], "name the platform"), (["--platform", "nosuchhost"], "name the platform"),
                                        (["--platform", "codex", "--user", "--project"], "not both")])
def test_usage_errors(home, tmp_path, args, said):
    result = run(home, tmp_path, *args)
    assert result.returncode == 2 and said in result.stderr


@pytest.mark.parametrize("command, ours", [
    ("/home/u/.venv/bin/plugkit hook PreToolUse --platform codex", True),
    ("'/path with space/plugkit' hook Stop", True),
    ("/usr/bin/python3.11 -m client.cli hook Stop --platform gemini", True),
    ("/v/bin/python -S /v/lib/python3.11/site-packages/client/hook_entry.py hook Stop --platform qwen", True),
    ("'/a b/python' -S '/a b/client/hook_entry.py' hook PreToolUse", True),
    ("/v/bin/python -S /tmp/evil.py hook Stop", False),
    ("plugkit exec:python", False), ("~/bin/audit.sh", False), (None, False), ("'unbalanced", False),
])
def test_is_ours_recognises_only_plugkit_hook_commands(command, ours):
    assert install.is_ours(command) is ours


@pytest.mark.parametrize("link", ["dir", "file"])
def test_a_project_install_never_writes_through_a_link(home, tmp_path, link):
    # The runner installs a worker's hooks outside any sandbox, in a worktree whose files the
    # worker committed or left: `.claude` linked to the person's own settings must not be followed.
    rel = install.TARGETS["claude-code"].project_path
    outside = tmp_path / "person"
    (outside / rel).parent.mkdir(parents=True)
    (outside / rel).write_text(json.dumps(USER_SETTINGS))
    before = (outside / rel).read_text()
    project = tmp_path / "worktree"
    project.mkdir()
    first = rel.split("/")[0]
    if link == "dir":
        (project / first).symlink_to(outside / first)
    else:
        (project / rel).parent.mkdir(parents=True)
        (project / rel).symlink_to(outside / rel)
    done = run(home, project, "--platform", "claude-code")
    assert (outside / rel).read_text() == before, done.stdout  # the person's file untouched
    assert done.returncode != 0 and "symbolic link" in done.stderr, done.stderr
