"""The tool names each installed host registers, read two ways: from its installed bundle (the
registration each one uses, grepped), and from the tools it offers the scripted model on a
first request. Neither alone is enough: bundles of native binaries (Codex's Rust, Copilot's
single executable) hold no greppable registrations, and a host offers only the tools of one
configuration (Claude Code defers NotebookEdit; OpenCode offers apply_patch to GPT models).

Each grep is written against the bundle's own markers, not minified names, and must find at
least MINIMUM names: a layout change that finds nothing fails instead of passing empty.
"""

import json
import mmap
import re
from pathlib import Path

from plugkit.host_tools import SHELL, WRITE, names
from tests.hosts.hosts import cache_dir

FIX = "classify each in its row of plugkit/hosts.py (write, shell or other) after reading what it does"


def known(platform: str) -> frozenset:
    """Every tool name the platform's row classifies (write, shell or other)."""
    return names(platform, WRITE) | names(platform, SHELL) | names(platform, "other")

# host -> the file(s) under node_modules holding its registrations (globs)
BUNDLES = {
    "claude-code": "@anthropic-ai/claude-code-linux-x64/claude",
    "qwen": "@qwen-code/qwen-code/cli.js",
    "gemini": "@google/gemini-cli/bundle/*.js",
    "opencode": "opencode-linux-x64/bin/opencode",
    "kilo": "@kilocode/cli-linux-x64/bin/kilo",
}
MINIMUM = {"claude-code": 30, "qwen": 15, "gemini": 20, "opencode": 10, "kilo": 15}
# The package whose version each row's "source" names.
PACKAGE_JSON = "{package}/package.json"

# Every pattern starts at a literal (the constructor's `({name:`, the `.gen(function*(){` of a
# definition): a pattern starting with a character class would scan 200 MB binaries for minutes.
# Claude Code: every tool is built by one constructor, `<f>({name:<var>,<one of these keys>`,
# and <var> is declared once as `<var>="Name"`.
_CLAUDE_TOOL = re.compile(rb"\(\{name:([\w$]{1,8}),(?:ruleContentField|searchHint|aliases|"
                          rb"maxResultSizeChars|isEnabled|userFacingName)")
# Qwen Code: packages/core/src/tools/tool-names.ts, `ToolNames = { EDIT: "edit", ... }`.
_QWEN_BLOCK = re.compile(rb"ToolNames = \{([^}]*)\}")
_QWEN_NAME = re.compile(rb'[A-Z_]+: "([a-z_]+)"')
# Gemini CLI: one constant per tool, `var <X>_TOOL_NAME = "name";`.
_GEMINI_NAME = re.compile(rb'_TOOL_NAME = "([a-z_]+)";')
# OpenCode / Kilo: `Tool.define("<id>", Effect.gen(function*(){...` (minified), the id a literal
# or a variable declared `<var>="<id>"`. Effect.gen serves other things than tools, so only the
# functions that define the file tools count as Tool.define. Kilo also lists
# `{id:"<id>",file:"kilocode/tool/..."}`.
_GEN = re.compile(rb"\.gen\(function\*\(\)\{")
_DEFINE = re.compile(rb'([\w$]{1,4})\((?:"([a-z_]+)"|([\w$]{1,5})),[\w$]{1,3}$')
_FILE_TOOLS = frozenset({"read", "write", "edit"})
_LISTED = re.compile(rb'\{id:"([a-z_]+)",file:"kilocode/tool/[^"]+"\}')


def _declared(data, variables: set) -> dict:
    """variable -> the string it is first declared as (`<var>="..."`), in one pass."""
    if not variables:
        return {}
    alternatives = b"|".join(re.escape(v) for v in sorted(variables, key=len, reverse=True))
    found: dict = {}
    for m in re.finditer(rb"[,;{\s](" + alternatives + rb')="([A-Za-z_]+)"', data):
        found.setdefault(m.group(1), m.group(2).decode())
    return found


def _claude(data) -> set[str]:
    return set(_declared(data, {m.group(1) for m in _CLAUDE_TOOL.finditer(data)}).values())


def _qwen(data) -> set[str]:
    block = _QWEN_BLOCK.search(data)
    return {m.group(1).decode() for m in _QWEN_NAME.finditer(block.group(1))} if block else set()


def _gemini(data) -> set[str]:
    return {m.group(1).decode() for m in _GEMINI_NAME.finditer(data)}


def _opencode(data) -> set[str]:
    defines = [m for g in _GEN.finditer(data) if (m := _DEFINE.search(data[max(0, g.start() - 24):g.start()]))]
    definers = {m.group(1) for m in defines if m.group(2) and m.group(2).decode() in _FILE_TOOLS}
    ours = [m for m in defines if m.group(1) in definers]
    names = {m.group(2).decode() for m in ours if m.group(2)}
    names |= set(_declared(data, {m.group(3) for m in ours if m.group(3)}).values())
    return names | {m.group(1).decode() for m in _LISTED.finditer(data)}


READERS = {"claude-code": _claude, "qwen": _qwen, "gemini": _gemini, "opencode": _opencode, "kilo": _opencode}


def registered(host: str) -> set[str]:
    """The tool names the host's installed bundle registers."""
    names: set[str] = set()
    files = sorted(cache_dir().joinpath("node_modules").glob(BUNDLES[host]))
    assert files, f"no bundle for {host} at {BUNDLES[host]} under {cache_dir()}; run scripts/setup"
    for path in files:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            names |= READERS[host](data)
    return names


def installed_version(package: str) -> str:
    path = cache_dir() / "node_modules" / package / "package.json"
    return json.loads(Path(path).read_text())["version"]


def offered(body: dict) -> set[str]:
    """The tool names one model request offers, in any of the three APIs' shapes; a built-in
    tool with no name (Codex's web_search, tool_search) by its type."""
    names = set()
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        for declared in tool.get("functionDeclarations") or []:  # Gemini
            names.add(declared.get("name"))
        name = tool.get("name") or (tool.get("function") or {}).get("name")  # Anthropic, Responses / chat
        if name:
            names.add(name)
        elif not tool.get("functionDeclarations") and tool.get("type"):
            names.add(tool["type"])
    return {n for n in names if isinstance(n, str)}
