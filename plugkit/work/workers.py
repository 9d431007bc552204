"""The workers `plugkit work` can start, one row each: the program, its headless unattended
argv, where `plugkit install` puts its hooks, and how it says it is done.

Every host row starts the host headless in the item's worktree with the host's own
permission prompts off: nobody is there to answer them, and plugkit's hooks (installed in
the worktree, talking to this runner) are the guard instead: the gates, the destructive-command
policy, the Stop gate. Nothing a person's own configuration provides (auth type, model, base
URL, API key) is baked in: the worker inherits the environment of whoever ran `plugkit work`.
Pure: standard library and plugkit only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class WorkerRow:
    name: str                  # "claude-code" | "codex" | "qwen" | "gemini" | "command"
    program: str | None        # the binary looked up on PATH (None: command, given by --run)
    platform: str | None       # the `plugkit install --platform` value for its hooks (None: no hooks)
    hooks_file: str | None     # where that install writes, relative to the worktree
    args: Callable[[str, str], list[str]]  # (prompt, worktree) -> argv after the program
    prompt_on_stdin: bool      # True: the prompt is written to stdin, then closed
    done: str                  # one line: how this worker says it is done (`plugkit work --help`)


def _codex_trust(worktree: str) -> list[str]:
    # Codex reads a project's .codex/config.toml (where plugkit installs the hooks) only in a
    # project a person trusted, and skips an untrusted one silently. `--trust` would write that
    # trust into the user's own ~/.codex/config.toml for every worktree ever made; a `-c`
    # override trusts this worktree for this run only. The path is a TOML quoted key (JSON
    # string escaping is valid TOML basic-string escaping), so dots and spaces in it are safe.
    return ["-c", f"projects.{json.dumps(worktree)}.trust_level=\"trusted\""]


WORKERS: dict[str, WorkerRow] = {row.name: row for row in (
    WorkerRow(
        "claude-code", "claude", "claude-code", ".claude/settings.json",
        # -p: one headless turn, then exit. bypassPermissions: no permission prompt waits for a
        # person who is not there; PreToolUse hooks still run before every tool call.
        lambda prompt, worktree: ["-p", prompt, "--permission-mode", "bypassPermissions"],
        False, "exits 0 when its headless turn (-p) ends; plugkit's Stop hook may turn it back first"),
    WorkerRow(
        "codex", "codex", "codex", ".codex/config.toml",
        # exec: headless. --skip-git-repo-check: a worktree's .git is a file, not a dir.
        # --dangerously-bypass-approvals-and-sandbox: no approval prompt; plugkit's PreToolUse
        # hook is the guard. --dangerously-bypass-hook-trust: Codex runs a new hook only after
        # a person trusted it in /hooks; these are plugkit's own, just installed by the runner.
        lambda prompt, worktree: ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                                  "--dangerously-bypass-hook-trust", *_codex_trust(worktree), prompt],
        False, "`codex exec` exits 0 after its last turn; plugkit's Stop hook may turn it back first"),
    WorkerRow(
        "qwen", "qwen", "qwen", ".qwen/settings.json",
        # --yolo: every tool call approved without a prompt; the PreToolUse hook still decides.
        lambda prompt, worktree: ["-p", prompt, "--yolo"],
        False, "exits 0 when its headless turn (-p) ends; plugkit's Stop hook may turn it back first"),
    WorkerRow(
        "gemini", "gemini", "gemini", ".gemini/settings.json",
        # --yolo: as qwen; its BeforeTool hook still decides.
        lambda prompt, worktree: ["-p", prompt, "--yolo"],
        False, "exits 0 when its headless turn (-p) ends; plugkit's AfterAgent hook may turn it back first"),
    WorkerRow(
        "command", None, None, None,
        # Any program (--run PROGRAM ARGS...): a custom agent, or a test's script.
        lambda prompt, worktree: [],
        True, "exits 0 when done: the prompt arrives on stdin, the worktree is its cwd"),
)}


def row(name: str) -> WorkerRow:
    try:
        return WORKERS[name]
    except KeyError:
        raise ValueError(f"unknown worker {name!r}; choose one of: {', '.join(WORKERS)}") from None


def command_line(row: WorkerRow, prompt: str, worktree: str, run: list[str] | None) -> tuple[list[str], str | None]:
    """(argv, stdin) that start this worker on this prompt in this worktree."""
    if row.program is None:
        if not run:
            raise ValueError(f"--worker {row.name} needs --run PROGRAM")
        return [*run, *row.args(prompt, worktree)], prompt
    argv = [row.program, *row.args(prompt, worktree)]
    return argv, (prompt if row.prompt_on_stdin else None)


def install_args(row: WorkerRow) -> list[str] | None:
    """The `plugkit install` arguments that put this worker's hooks in a worktree (None: no hooks)."""
    return ["install", "--platform", row.platform] if row.platform else None
