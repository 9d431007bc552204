"""An agent on Claude Code, as far as the gates can see it: hook calls with the real CLI,
`plugkit` verbs typed into its shell, `exec:` calls caught by the hook; and the git
repositories the gates tests work in."""

import json
import re
import shlex
import subprocess
from pathlib import Path
from typing import Optional

from tests.support.runner_home import cli_argv

SID = "agent-1"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def make_repo(path: Path, config: str) -> Path:
    """A repository with one commit that already holds the gates' configuration (config.toml
    is the user's file, committed like any other; plugkit's own state stays out of git)."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for key, value in (("user.name", "Agent"), ("user.email", "agent@example.invalid"),
                       ("commit.gpgsign", "false")):
        git(path, "config", key, value)
    (path / "README").write_text("a workspace\n")
    (path / ".plugkit").mkdir()
    (path / ".plugkit" / "config.toml").write_text(config)
    git(path, "add", "README", ".plugkit/config.toml")
    git(path, "commit", "-q", "-m", "init")
    return path


class Agent:
    """What an agent on Claude Code does: every tool call passes PreToolUse first, `plugkit`
    verbs are typed into its shell (a tool call that was allowed), and each turn ends in Stop."""

    def __init__(self, home, repo: Path, session: str = SID) -> None:
        self.home, self.repo, self.session = home, repo, session

    def hook(self, event: str, platform: str = "claude-code", env: Optional[dict] = None,
             **fields) -> subprocess.CompletedProcess:
        data = {"session_id": self.session, "cwd": str(self.repo), "hook_event_name": event, **fields}
        result = subprocess.run(cli_argv() + ["hook", event, "--platform", platform],
                                input=json.dumps(data).encode(), capture_output=True,
                                env={**self.home.env, **(env or {})}, timeout=90)
        # A hook must never fail or use exit 2 (platforms ignore stdout then).
        assert result.returncode == 0, result.stderr
        return result

    def tool(self, tool_name: str, tool_input: dict, **more) -> tuple[str, str]:
        """(decision, what the model reads) as Claude Code would act on the hook's stdout."""
        result = self.hook("PreToolUse", tool_name=tool_name, tool_input=tool_input, **more)
        if not result.stdout:
            return "allow", ""  # no opinion: Claude Code's own permission rules apply
        out = json.loads(result.stdout)["hookSpecificOutput"]
        assert out["hookEventName"] == "PreToolUse"
        if "permissionDecision" in out:
            return out["permissionDecision"], out["permissionDecisionReason"]
        return "allow", out["additionalContext"]  # an allow carrying a warning

    def write(self, name: str, content: str) -> tuple[str, str]:
        return self.tool("Write", {"file_path": str(self.repo / name), "content": content})

    def bash(self, command: str) -> tuple[str, str]:
        return self.tool("Bash", {"command": command, "description": "agent's shell call"})

    def exec_task(self, code: str, cwd: Optional[Path] = None, wait: Optional[str] = None) -> tuple[int, str]:
        """An `exec:bash` Bash call, caught by the hook and run by the runner: (task id, reason)."""
        env = {"PLUGKIT_HOOK_WAIT": wait} if wait else None
        data = {"tool_name": "Bash", "tool_input": {"command": "exec:bash\n" + code}}
        if cwd is not None:
            data["cwd"] = str(cwd)
        out = json.loads(self.hook("PreToolUse", env=env, **data).stdout)["hookSpecificOutput"]
        assert out["permissionDecision"] == "deny"  # the channel that delivers the result
        reason = out["permissionDecisionReason"]
        return int(re.search(r"as task_(\d+)", reason).group(1)), reason

    def stop(self, active: bool = False) -> tuple[bool, str]:
        result = self.hook("Stop", stop_hook_active=active)
        if not result.stdout:
            return False, ""
        out = json.loads(result.stdout)
        if out.get("decision") == "block":
            return True, out["reason"]
        return False, out["systemMessage"]  # let through, with a note for the person

    def plugkit(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
        """A `plugkit` verb typed into the agent's shell: the gates' own verbs must pass its
        PreToolUse untouched. Run from another directory on purpose: --cwd, not the process's
        own cwd, must name the workspace (and anchor relative paths)."""
        argv = (*args, "--session", self.session, "--cwd", str(self.repo))
        assert self.bash(shlex.join(("plugkit",) + argv)) == ("allow", ""), args
        result = self.home.cli(*argv, cwd="/")
        assert (result.returncode == 0) == ok, (args, result.returncode, result.stdout, result.stderr)
        return result

    def json(self, *args: str) -> dict:
        return json.loads(self.plugkit(*args, "--json").stdout)

    def phase(self) -> str:
        return self.json("gate", "status")["phase"]

    def to_verify(self) -> None:
        """PLAN -> VERIFY the short way (app.txt emitted and committed), the verify run green."""
        self.plugkit("gate", "advance", "EXECUTE")
        self.plugkit("gate", "advance", "EMIT")
        (self.repo / "app.txt").write_text("done\n")
        self.plugkit("gate", "emit", "app.txt")
        git(self.repo, "add", "app.txt")
        git(self.repo, "commit", "-q", "-m", "app")
        self.plugkit("gate", "advance", "VERIFY")
        assert self.json("gate", "verify", "--wait", "20")["verify"]["outcome"] == "green"
