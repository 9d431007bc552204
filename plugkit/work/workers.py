"""The workers `plugkit work` can start, one row each: the program, its headless unattended
argv, where `plugkit install` puts its hooks, and how it says it is done. A host's row is
derived from its `worker` fact in plugkit/hosts.py; the command worker is no host.

Every host row starts the host headless in the item's worktree with the host's own
permission prompts off: nobody is there to answer them, and plugkit's hooks (installed in
the worktree, talking to this runner) are the guard instead: the gates, the destructive-command
policy, the Stop gate. Nothing a person's own configuration provides (auth type, model, base
URL, API key) is baked in: the worker inherits the environment of whoever ran `plugkit work`.
Standard library and plugkit only; the codex row reads back the hooks file its install wrote.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from typing import Callable, Mapping

from plugkit import confined
from plugkit.host_row import PROMPT, AgentHost
from plugkit.hosts import COMMAND, HOSTS


@dataclass(frozen=True)
class WorkerRow:
    name: str                  # a host with a worker (plugkit.hosts.WORKER_NAMES) | "command"
    program: str | None        # the binary looked up on PATH (None: command, given by --run)
    platform: str | None       # the `plugkit install --platform` value for its hooks (None: no hooks)
    hooks_file: str | None     # where that install writes, relative to the worktree
    args: Callable[[str, str], list[str]]  # (prompt, worktree) -> argv after the program
    prompt_on_stdin: bool      # True: the prompt is written to stdin, then closed
    done: str                  # one line: how this worker says it is done (`plugkit work --help`)
    # Variables this host needs set for an unattended run in a fresh worktree, over the
    # caller's environment (see environment()); never a user's auth, model or endpoint.
    env: tuple[tuple[str, str], ...] = ()


def _toml(value: object) -> str:
    """A TOML inline value (what a codex `-c key=value` takes). JSON string escaping is valid
    TOML basic-string escaping, so any text is safe as a key or a string."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}={_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_toml(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))


def _codex_hooks(worktree: str) -> list[str]:
    # Codex never reads a linked worktree's .codex/config.toml (where `plugkit install` wrote
    # the hooks): it maps the worktree to its main repository and reads that one's .codex/
    # (seen in codex 0.169: `--trust` there records [projects."<main repo>"], and a trusted
    # worktree's own hooks never run). So the installed hooks are handed over as a `-c hooks=`
    # override, read back from the file the install wrote. And the worktree is marked
    # untrusted for this run: hooks of every config layer run, so a main repo whose
    # .codex/config.toml carries plugkit's hooks too would run each of them twice (an exec:
    # line twice). The user's own ~/.codex/config.toml (auth, model, provider) still applies.
    try:
        # Confined: a worktree a previous attempt wrote may hold a link out or a FIFO there.
        with confined.open_beneath(worktree, os.path.join(worktree, ".codex", "config.toml")) as fh:
            hooks = tomllib.load(fh).get("hooks")
    except (OSError, tomllib.TOMLDecodeError):
        hooks = None
    untrusted = ["-c", f"projects={{{json.dumps(worktree)}={{trust_level=\"untrusted\"}}}}"]
    return [*untrusted, "-c", f"hooks={_toml(hooks)}"] if isinstance(hooks, dict) and hooks else untrusted


# Words of a host's worker argv (plugkit/hosts.py) filled in per run: -> the words in their place.
EXPANSIONS: dict[str, Callable[[str], list[str]]] = {"{codex_hooks}": _codex_hooks}


def _host_args(argv: tuple[str, ...]) -> Callable[[str, str], list[str]]:
    def args(prompt: str, worktree: str) -> list[str]:
        out: list[str] = []
        for word in argv:
            out += [prompt] if word == PROMPT else EXPANSIONS[word](worktree) if word in EXPANSIONS else [word]
        return out
    return args


def _host_row(host: AgentHost) -> WorkerRow:
    w = host.worker
    assert w is not None  # only hosts with a worker fact reach here
    return WorkerRow(host.platform, w.program, host.platform, host.hooks.project_path,
                     _host_args(w.argv), False, w.done, w.env)


# Every host row with a worker (plugkit/hosts.py), then the command worker.
WORKERS: dict[str, WorkerRow] = {row.name: row for row in (
    *(_host_row(h) for h in HOSTS if h.worker is not None),
    WorkerRow(
        COMMAND, None, None, None,
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


def environment(row: WorkerRow, caller: Mapping[str, str]) -> dict[str, str]:
    """The worker's environment: the caller's (whoever ran `plugkit work`), plus the row's own."""
    return {**caller, **dict(row.env)}


def install_args(row: WorkerRow) -> list[str] | None:
    """The `plugkit install` arguments that put this worker's hooks in a worktree (None: no hooks)."""
    return ["install", "--platform", row.platform] if row.platform else None
