"""What the hooks ask: may this tool call run (PreToolUse), may the agent stop (Stop).

Tool names are rows of tables, one row per platform spelling, so supporting another
agent is adding a row. Rules are tried in order; the first that matches decides. The
mode then softens the decision: "advisory" turns a deny into an allow that carries the
reason as a warning, "off" allows everything silently.

Known gaps, by design of a hook that sees only a tool call: a shell command that writes
files (`echo > f`) is not a file-writing tool (the runner detects edits of its views
instead: `tampered`); and `exec:` commands are allowed whatever else they contain,
because running code through the runner is how unknowns get resolved. An approval
attempt is judged loosely on purpose (any spelling: variables, quotes, `env -u`, `sh -c`,
`exec:` code naming approve or approval.grant): a false alarm costs the person one look
at a prompt, a miss costs nothing either, since the runner refuses approvals from an
agent's process tree whatever the hook said.
"""

import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

# Every host's write and shell tools, read from the pinned hosts' sources (one table there).
from plugkit.host_tools import SHELL_TOOLS, WRITE_TOOLS  # noqa: F401  (re-exported)

PRE_TOOL_EVENTS = frozenset({"PreToolUse", "pre_tool_use", "BeforeTool"})
PATH_KEYS = ("file_path", "path", "notebook_path", "absolute_path", "filePath")  # filePath: OpenCode, Kilo

ALWAYS_ALLOWED = re.compile(r"^\s*(?:exec:|plugkit\s+exec)")
# A program may be named by a path (`/usr/bin/git`, `.venv/bin/plugkit`): without this, a
# path is a way around the rule. The path excludes the separators, so the scans from two
# start positions never overlap and a long command stays linear.
_START = r"(?:^|[\s;&|(`])(?:[^\s;&|(`]*/)?"
_COMMAND_END = re.compile(r"[;&|`)\n]")
_LIST_FLAG = re.compile(r"\s--list\b")
# git, then global options (only these take a separate argument), then the subcommand.
# Each option token has exactly one parse (the lookahead keeps the alternatives disjoint)
# and the scan never backtracks (*+), so one scan is linear; see commits_or_pushes for
# why scanning from every `git` stays linear too.
_WITH_ARG = r"(?:-[Cc]|--(?:git-dir|work-tree|namespace|exec-path|config-env))"
_GIT_WORD = re.compile(_START + r"git(?=\s)")
_GIT_OPTIONS = re.compile(rf"(?:\s+(?:{_WITH_ARG}\s+\S+|(?!{_WITH_ARG}\s)-\S+))*+")
_COMMIT_PUSH = re.compile(r"\s+(?:commit|push)\b")
PATCH_FILES = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class View:
    """What a decision may look at: the workspace's phase and unknowns, and the call."""

    phase: str
    unknown: tuple[str, ...]
    tool_name: str
    command: Optional[str]  # shell tools only
    paths: tuple[str, ...]  # file-writing tools only: the paths it names (as given)


@dataclass(frozen=True)
class Verdict:
    decision: str  # allow | deny | ask
    reason: str
    rule: str = ""  # the rule that decided ("" when none matched)


def view(phase: str, unknown: list[str], tool_name: str, tool_input: dict[str, Any]) -> View:
    command = None
    if tool_name in SHELL_TOOLS:
        raw = tool_input.get(SHELL_TOOLS[tool_name], "")
        command = " ".join(map(str, raw)) if isinstance(raw, list) else str(raw)
    paths: list[str] = []
    if tool_name in WRITE_TOOLS:
        paths += [str(tool_input[k]) for k in PATH_KEYS if isinstance(tool_input.get(k), str)]
        patch = tool_input.get("input") or tool_input.get("patch")
        if isinstance(patch, str):
            paths += [p.strip() for p in PATCH_FILES.findall(patch)]
    return View(phase, tuple(unknown), tool_name, command, tuple(paths))


def commits_or_pushes(command: str) -> bool:
    """`git [global options] commit|push` anywhere in the command line. A `git` lying inside
    the options scanned for an earlier one (`git -c git -c git ...`) is skipped: its scan
    would read the same tokens to the same end, and rescanning from each such `git` is
    what made one crafted command cost quadratic time (long enough to time the hook out)."""
    scanned = 0
    for word in _GIT_WORD.finditer(command):
        if word.end() <= scanned:
            continue
        scanned = _GIT_OPTIONS.match(command, word.end()).end()
        if _COMMIT_PUSH.match(command, scanned):
            return True
    return False


# Quote removal as a shell does it, roughly: pl"ug"kit and 'approve' are the words they spell.
_UNQUOTE = str.maketrans("", "", "'\"\\")
_WORD = re.compile(r"[^\s;&|()`<>,\[\]{}=]+")
_RPC_NAME = re.compile(r"approval[._]grant", re.IGNORECASE)
_EXEC_MENTION = re.compile(r"\bapprov(?:e|al)\b", re.IGNORECASE)


def approval_attempt(command: str) -> bool:
    """The agent trying to approve, in any spelling a hook can see: the RPC method named;
    `exec:` code that mentions approving; or the word `approve` in a command that names
    plugkit anywhere (`p=plugkit; $p approve`, `env -u X plugkit approve`, `sh -c '...'`)
    or runs it through a variable (`$P approve`). `plugkit approve --list` only reads.
    Linear: each command segment is searched for --list once ."""
    if _RPC_NAME.search(command):
        return True
    if ALWAYS_ALLOWED.match(command):
        return bool(_EXEC_MENTION.search(command))
    text = command.translate(_UNQUOTE)
    if "approve" not in text.lower():
        return False
    words = list(_WORD.finditer(text))
    names_plugkit = any("plugkit" in m.group().lower() or m.group().endswith("client.cli") for m in words)
    command_end = last_list = -1
    for i, m in enumerate(words):
        if m.group().lower() != "approve" or not (names_plugkit or (i and words[i - 1].group().startswith("$"))):
            continue
        if m.end() > command_end:
            end = _COMMAND_END.search(text, m.end())
            command_end = end.start() if end else len(text)
            last_list = max((x.start() for x in _LIST_FLAG.finditer(text, m.end(), command_end)), default=-1)
        if last_list < m.end():
            return True
    return False


def approved_item(command: str) -> Optional[str]:
    """The item id a plain `plugkit approve ID` names (the first non-flag word after approve)."""
    words = _WORD.findall(command.translate(_UNQUOTE))
    for i, w in enumerate(words):
        if w.lower() == "approve":
            for nxt in words[i + 1:]:
                if not nxt.startswith("-"):
                    return nxt
            return None
    return None


def _names(unknown: tuple[str, ...]) -> str:
    shown = ", ".join(unknown[:8])
    return shown + (f" (+{len(unknown) - 8} more)" if len(unknown) > 8 else "")


def _protected(v: View) -> bool:
    for p in v.paths:
        parts = p.replace("\\", "/").split("/")
        if parts[-1] == ".prd" or ".plugkit" in parts[:-1]:
            return True
    return False


# A shell command that names a lifecycle view and writes something: redirection, in-place
# editors, file moves, or a script's write call. Reading (`cat .prd`, `git add .prd`) passes.
# A first line of defence only: what slips past (another spelling, an editor) is still
# caught by the runner comparing the views with its ledger, and shown as tampered.
_VIEW_NAMED = re.compile(r"(?:^|[\s'\"/=(<>])(?:\.prd(?![\w.])|\.plugkit/(?:state\.json|evidence)\b)")
_WRITES = re.compile(r"(?:>|\bsed\s+(?:-\w+\s+)*-\w*i|\bperl\s+-\w*i|\b(?:tee|mv|cp|rm|truncate|dd|install)\b"
                     r"|\bopen\(|\.write\(|write_(?:text|bytes)\(|json\.dump\()")


def edits_views(command: str) -> bool:
    return bool(_VIEW_NAMED.search(command)) and bool(_WRITES.search(command))


def _write_before_emit(v: View) -> str:
    if v.unknown:
        return (f"phase {v.phase}: files are written from EMIT on; unknown mutables: {_names(v.unknown)} "
                "(resolve each with an exec: run, then `plugkit mutable resolve NAME TASK`)")
    return f"phase {v.phase}: files are written from EMIT on; `plugkit gate advance` when the phase's work is done"


Rule = tuple[str, Callable[[View], bool], str, Callable[[View], str]]
# (name, matches, decision, reason). Order matters: the first match decides.
RULES: tuple[Rule, ...] = (
    ("approval_is_for_humans", lambda v: v.command is not None and approval_attempt(v.command),
     "ask", lambda v: "approving a critical work item is a person's decision: `plugkit approve` must be typed by "
                      "the user, not run by the agent"),
    ("exec_always_allowed", lambda v: v.command is not None and bool(ALWAYS_ALLOWED.match(v.command)),
     "allow", lambda v: ""),
    ("no_commit_with_unknowns",
     lambda v: v.command is not None and bool(v.unknown) and commits_or_pushes(v.command),
     "deny", lambda v: f"git commit/push while mutables are unknown: {_names(v.unknown)}"),
    ("lifecycle_files_via_plugkit", lambda v: v.tool_name in WRITE_TOOLS and _protected(v),
     "deny", lambda v: ".prd and .plugkit/ are changed through plugkit (prd add|update, mutable ...), "
                       "not written directly"),
    ("lifecycle_files_not_by_shell", lambda v: v.command is not None and edits_views(v.command),
     "deny", lambda v: ".prd and .plugkit/ are views of the runner's ledger, changed through plugkit (prd add|update, "
                       "mutable ...); an edit from the shell is not believed and shows as tampered"),
    ("no_write_before_emit", lambda v: v.tool_name in WRITE_TOOLS and v.phase in ("PLAN", "EXECUTE"),
     "deny", _write_before_emit),
    ("no_write_when_complete", lambda v: v.tool_name in WRITE_TOOLS and v.phase == "COMPLETE",
     "deny", lambda v: "phase COMPLETE: nothing is left to write; `plugkit prd add` new work to reopen (back to PLAN)"),
)


def decide(v: View) -> Verdict:
    for name, matches, decision, reason in RULES:
        if matches(v):
            return Verdict(decision, reason(v), name)
    return Verdict("allow", "")


def soften(mode: str, verdict: Verdict) -> Verdict:
    if mode == "off":
        return Verdict("allow", "")
    if mode == "advisory" and verdict.decision == "deny":
        return Verdict("allow", f"plugkit gates (advisory; would deny): {verdict.reason}", verdict.rule)
    return verdict


SHOWN = 10  # ids a Stop line names before it counts the rest, as `gate status` does


def _capped(v: list) -> str:
    return ", ".join(map(str, v[:SHOWN])) + (f", ... {len(v) - SHOWN} more (plugkit gate status --all)"
                                             if len(v) > SHOWN else "")


# condition name -> the sentence Stop shows when it does not hold (value as reported)
SAY: dict[str, Callable[[Any], str]] = {
    "no_open_work_items": lambda v: f"open work items: {_capped(v)}",
    "no_unknown_mutables": lambda v: f"unknown mutables: {_capped(v)}",
    "no_running_tasks": lambda v: f"tasks still running: {_capped(v)}",
    "git_clean": lambda v: (f"uncommitted changes: {', '.join(v[:5])}" + (" ..." if len(v) > 5 else ""))
    if isinstance(v, list) else f"git: {v}",
    "nothing_unpushed": lambda v: f"unpushed: {v}",
    "verify_green": lambda v: f"verify: {v}",
    "views_untampered": lambda v: "tampered (edited outside plugkit; revert it, redo it through plugkit, or "
                                  f"`plugkit gate restore`): {'; '.join(v[:3])}" + (" ..." if len(v) > 3 else ""),
}


def stop_reasons(phase: str, failing: list[tuple[str, Any]]) -> list[str]:
    """What is missing, shortest sentence first: the quick wins lead and the list stays scannable."""
    lines = [SAY.get(name, lambda v, n=name: f"{n}: {v}")(value) for name, value in failing]
    if phase != "COMPLETE":
        lines.append(f"phase is {phase}, not COMPLETE")
    return sorted(lines, key=lambda s: (len(s), s))
