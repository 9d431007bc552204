"""The agent hosts plugkit knows, one row each: the one table `plugkit install` detects them by
and the runner recognises them in a process tree by (a person's approval must come from no
process of theirs).

A row: the label shown to people; the programs a person runs (on PATH, and what
/proc/PID/comm or argv[0] says once running, a `.exe` suffix ignored: Claude Code and OpenCode
ship native `*.exe` binaries); the npm package paths that show up in the command line of a
node-launched host (`node .../@qwen-code/qwen-code/cli.js`) or of the native binary a
launcher starts (`.../@kilocode/cli-linux-x64/bin/kilo`); the workspace entries that show
a workspace is configured for it; and the environment variables it sets in its tools'
shells (read from each pinned version in tests/hosts, running `env` through its shell tool),
which a process it started keeps after it detached (setsid) unless it clears them. Cursor
is not among the hosts tests/hosts runs: no markers are claimed for it. Adding a host is
adding a row.
"""

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class AgentHost:
    platform: str  # plugkit install --platform
    label: str
    programs: tuple[str, ...]
    packages: tuple[str, ...]  # command-line fragments of the installed package
    entries: tuple[str, ...]  # workspace files or directories that show it is configured
    markers: tuple[str, ...] = ()  # environment variables its tools' shells carry


HOSTS: tuple[AgentHost, ...] = (
    AgentHost("claude-code", "Claude Code", ("claude",), ("@anthropic-ai/claude-code", "/claude-code/cli"),
              (".claude", "CLAUDE.md"),
              ("CLAUDECODE", "CLAUDE_CODE_SESSION_ID")),
    AgentHost("qwen", "Qwen Code", ("qwen",), ("@qwen-code/qwen-code",), (".qwen", "QWEN.md"), ("QWEN_CODE",)),
    AgentHost("gemini", "Gemini CLI", ("gemini",), ("@google/gemini-cli",), (".gemini", "GEMINI.md"), ("GEMINI_CLI",)),
    AgentHost("codex", "Codex CLI", ("codex",), ("@openai/codex", "codex-cli"), (".codex",),
              ("CODEX_THREAD_ID", "CODEX_SESSION_ID")),
    AgentHost("cursor", "Cursor", ("cursor", "cursor-agent"), ("cursor-agent",), (".cursor", ".cursorrules")),
    AgentHost("copilot", "Copilot CLI", ("copilot",), ("@github/copilot",),
              (".github/hooks", ".github/copilot-instructions.md"), ("COPILOT_CLI", "COPILOT_AGENT_SESSION_ID")),
    AgentHost("opencode", "OpenCode", ("opencode",), ("opencode-ai", "/opencode-linux-", "/opencode-darwin-"),
              (".opencode", "opencode.json", "opencode.jsonc"), ("OPENCODE", "OPENCODE_PID")),
    AgentHost("kilo", "Kilo", ("kilo", "kilocode"), ("@kilocode/cli",), (".kilo", ".kilocode"), ("KILO", "KILO_PID")),
)
RUNTIMES = frozenset({"node", "nodejs", "bun", "deno"})
BY_PLATFORM: dict[str, AgentHost] = {h.platform: h for h in HOSTS}


def _program(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    return base[:-4] if base.endswith(".exe") else base


def host_of(comm: str, argv: tuple[str, ...]) -> Optional[AgentHost]:
    """The host a process is, from its name and command line; None when it is none of them.
    comm is cut at 15 bytes by the kernel, so argv[0] is asked too."""
    names = {_program(comm)} | {_program(a) for a in argv[:1]}
    if argv and _program(argv[0]) in RUNTIMES:  # `node /usr/bin/gemini`: the script names the host
        names |= {_program(a) for a in argv[1:2]}
    line = " ".join(argv)
    for host in HOSTS:
        if names & set(host.programs) or any(p in line for p in host.packages):
            return host
    return None


def marked_by(environ: dict[str, str]) -> Optional[tuple[AgentHost, str]]:
    """The host whose marker an environment carries (and the variable), or None. Later rows
    first: Kilo, a fork of OpenCode, sets OPENCODE as well as KILO."""
    for host in reversed(HOSTS):
        for name in host.markers:
            if environ.get(name):
                return host, name
    return None
