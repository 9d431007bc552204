"""Bringing memories back: ranked search, staleness flags, and the bounded SessionStart index.

Staleness heuristic (cheap by design; a memory is checked each time it is recalled):
- paths: whitespace tokens with a '/' or a known source extension. Relative ones are
  resolved against the workspace root; a relative path without an extension counts
  only if its first component exists (so "and/or" is prose, not a path); an absolute
  one only if its first component exists (so "/health" is a route, not a path); a bare
  file name (`setup.py`) passes if any scanned file has that name. Missing -> STALE.
- functions: `name()` inside backticks; flags: `--flag` inside backticks, unless the
  span starts with another tool's command (`git commit --amend` names git's flag, not
  ours). Each must occur as a whole word in some workspace text file, found by one
  bounded walk (hidden and dependency dirs skipped, files over 512 KiB or binary
  skipped, at most 5000 files / 16 MiB / `budget_s`). A symbol the walk did not reach
  before its budget ran out is "unknown", never reported stale.
- user-wide memories are not about this workspace: only their absolute paths are checked.
"""

import os
import re
import time
from dataclasses import dataclass, field
from typing import Iterable, Optional

from plugkit import confined
from plugkit.memory import rules
from plugkit.memory.store import LINE_MAX, Memory, MemoryStore, index_line

SKIP_DIRS = frozenset({"node_modules", "__pycache__", "venv", "env", "build", "dist", "target",
                       "site-packages", "vendor", "coverage", "htmlcov"})
EXTERNAL_COMMANDS = frozenset({"git", "gh", "pip", "pip3", "uv", "python", "python3", "pytest", "npm",
                               "npx", "yarn", "pnpm", "node", "docker", "cargo", "go", "make", "ls",
                               "grep", "rg", "find", "curl", "ssh", "sudo", "apt", "apt-get", "brew"})
# Words with a source extension that are names of things, not files.
NOT_FILES = frozenset({"node.js", "vue.js", "next.js", "nuxt.js", "express.js", "chart.js",
                       "three.js", "d3.js", "react.js", "angular.js", "ember.js"})
MAX_FILE = 512 << 10
MAX_FILES = 5000
MAX_BYTES = 16 << 20

_SPAN = re.compile(r"`([^`\n]+)`")
_FUNC = re.compile(r"([A-Za-z_][\w.]*)\s*\(")
_FLAG = re.compile(r"(?<![\w-])(--[A-Za-z][\w-]*)")
_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
_TRIM_LEFT = "`'\"([{<*"
_TRIM_RIGHT = "`'\")]}>*,;:!?."


@dataclass
class Refs:
    paths: set = field(default_factory=set)
    functions: set = field(default_factory=set)
    flags: set = field(default_factory=set)


def references(body: str) -> Refs:
    """The paths, functions and flags a memory's text names (see the module docstring)."""
    refs = Refs()
    for span in _SPAN.findall(body):
        refs.functions.update(name.rsplit(".", 1)[-1] for name in _FUNC.findall(span))
        words = span.split()
        if words and words[0] not in EXTERNAL_COMMANDS:
            refs.flags.update(_FLAG.findall(span))
    for raw in _LINK.sub(r" \1 \2 ", body).split():
        token = raw.lstrip(_TRIM_LEFT).rstrip(_TRIM_RIGHT)
        token = re.sub(r"(:\d+)+$", "", token).split("#", 1)[0]
        if token and not re.search(r"[:@$*?=%|\\{}<>]", token) and not token.startswith("-") \
                and len(token) < 256 and rules.looks_like_path(token) and token.lower() not in NOT_FILES:
            refs.paths.add(token)
    return refs


class WorkspaceScan:
    """One bounded walk of the workspace's text files, shared by every memory checked at once."""

    def __init__(self, root: str, budget_s: float = 0.5) -> None:
        self.root, self.budget_s = root, budget_s
        self.basenames: set[str] = set()
        self.complete = False

    def _files(self) -> Iterable[str]:
        for here, dirs, files in os.walk(self.root):
            # Hidden dirs hold VCS data, caches and our own memories (which would always
            # "find" what they name); .github is kept because CI files name real flags.
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS and (not d.startswith(".") or d == ".github")]
            for name in files:
                self.basenames.add(name)
                yield os.path.join(here, name)

    def find(self, words: set[str], want_names: bool = False) -> set[str]:
        """Which of `words` occur as whole words. `complete` says the answer is final:
        the walk finished, or every word was found (and no file names were wanted)."""
        pending = {w: re.compile(r"(?<![\w-])" + re.escape(w) + r"(?![\w-])") for w in words}
        found: set[str] = set()
        deadline = time.monotonic() + self.budget_s
        seen_files = seen_bytes = 0
        for path in self._files():
            if time.monotonic() > deadline or seen_files >= MAX_FILES:
                return found
            if not pending:
                if not want_names:
                    self.complete = True
                    return found
                seen_files += 1
                continue  # only collecting file names now: no need to read contents
            if seen_bytes >= MAX_BYTES:
                return found
            try:
                if os.lstat(path).st_size > MAX_FILE:
                    continue
            except OSError:
                continue
            # Never through a link out of the root, never a FIFO (it would hold the walk).
            data = confined.read_in(self.root, os.path.relpath(path, self.root), MAX_FILE)
            if data is None:
                continue
            seen_files += 1
            seen_bytes += len(data)
            if b"\0" in data[:8192]:
                continue  # binary
            text = data.decode("utf-8", errors="ignore")
            for word, rx in list(pending.items()):
                if word in text and rx.search(text):
                    found.add(word)
                    del pending[word]
        self.complete = True
        return found


def _path_missing(token: str, root: str, scan: "WorkspaceScan", user: bool) -> Optional[bool]:
    """True missing, False present, None not treated as a path here."""
    if token.startswith("~"):
        return not os.path.exists(os.path.expanduser(token))
    if token.startswith("/"):
        first = token.strip("/").split("/", 1)[0]
        if "/" not in token.strip("/") or not os.path.isdir("/" + first):
            return None
        return not os.path.exists(token)
    if user:
        return None
    if "/" not in token:
        if os.path.exists(os.path.join(root, token)) or token in scan.basenames:
            return False
        return True if scan.complete else None
    first = token.split("/", 1)[0]
    has_ext = rules.looks_like_path(token.rsplit("/", 1)[-1])
    if not (has_ext or token.startswith((".", "..")) or os.path.exists(os.path.join(root, first))):
        return None
    return not os.path.exists(os.path.join(root, token))


def stale_reasons(memories: list[Memory], root: Optional[str], budget_s: float = 0.5) -> dict[str, list[str]]:
    """memory key -> what it names that the workspace no longer has (only stale ones appear).
    root is None only where there is no workspace, hence no project memories: user-wide ones
    are checked by absolute and ~ paths alone, never by a scan."""
    refs = {m.key: references(m.body) for m in memories}
    scan = WorkspaceScan(root, budget_s)
    wanted = set()
    for m in memories:
        if m.scope != "user":
            wanted |= refs[m.key].functions | refs[m.key].flags
    needs_names = any("/" not in p for m in memories if m.scope != "user" for p in refs[m.key].paths)
    found = scan.find(wanted, needs_names) if (wanted or needs_names) else set()
    result: dict[str, list[str]] = {}
    for m in memories:
        r, user, reasons = refs[m.key], m.scope == "user", []
        for p in sorted(r.paths):
            if _path_missing(p, root, scan, user):
                reasons.append(f"missing {p}")
        if not user and scan.complete:
            reasons += [f"`{f}()` not found" for f in sorted(r.functions - found)]
            reasons += [f"`{f}` not found" for f in sorted(r.flags - found)]
        if reasons:
            result[m.key] = reasons
    return result


def stale_flag(reasons: list[str]) -> str:
    if not reasons:
        return ""
    shown = "; ".join(reasons[:3]) + ("; ..." if len(reasons) > 3 else "")
    return f"[STALE: {shown}]"


_WORD = re.compile(r"--[\w-]+|\w+")


def search(memories: list[Memory], query: str, limit: int = 10) -> list[tuple[float, Memory]]:
    """Plain ranked text match: per query word, a name hit weighs 6 (4 inside a word),
    a description hit 3, body hits 1 each up to 3; the sum is scaled by the share of
    query words that matched, plus 5 when the whole query appears as a phrase. Ties:
    newest first."""
    terms = list(dict.fromkeys(_WORD.findall(query.lower())))
    phrase = " ".join(query.lower().split())
    ranked = []
    for m in memories:
        name, desc, body = m.name.lower(), m.description.lower(), m.body.lower()
        name_words = set(_WORD.findall(name))
        score, matched = 0.0, 0
        for t in terms:
            s = (6 if t in name_words else 4 if t in name else 0) + (3 if t in desc else 0) + min(body.count(t), 3)
            if s:
                matched += 1
                score += s
        if not matched:
            continue
        score *= matched / len(terms)
        if len(terms) > 1 and any(phrase in " ".join(f.split()) for f in (name, desc, body)):
            score += 5
        ranked.append((round(score, 2), m))
    ranked.sort(key=lambda sm: sm[1].updated, reverse=True)
    ranked.sort(key=lambda sm: sm[0], reverse=True)  # stable: equal scores stay newest first
    return ranked[:limit]


CONTEXT_HEADER = ("plugkit memory (notes from earlier sessions, not facts; STALE: names what the "
                  "workspace lost). Read one: `plugkit memory show NAME`")


def index_for_context(workspace: str, home: str, max_lines: int = 40, max_bytes: int = 4096,
                      budget_s: float = 0.3) -> str:
    """The SessionStart index: the header and one line per memory (newest first, stale
    ones flagged), at most max_lines lines and max_bytes bytes; "" when there are none.
    Pure and synchronous (a hook may call it in-process); raises OSError only when a
    memory directory exists but cannot be listed."""
    return build_index(MemoryStore.for_cwd(workspace, home), max_lines, max_bytes, budget_s)[0]


def build_index(store: MemoryStore, max_lines: int = 40, max_bytes: int = 4096,
                budget_s: float = 0.3) -> tuple[str, int, int]:
    """(text, memories shown, memories in all)."""
    memories, problems = store.all()
    if not memories and not problems:
        return "", 0, 0
    stale = stale_reasons(memories, store.workspace, budget_s)
    lines = [CONTEXT_HEADER]
    size = len(CONTEXT_HEADER.encode()) + 1
    shown = 0
    for m in memories:
        line = index_line(m, stale_flag(stale.get(m.key, [])), LINE_MAX)
        # Keep one line (and its bytes) free for the "N more" pointer.
        if len(lines) + 2 > max_lines or size + len(line.encode()) + 1 + 80 > max_bytes:
            break
        lines.append(line)
        size += len(line.encode()) + 1
        shown += 1
    if shown < len(memories):
        lines.append(f"- ... {len(memories) - shown} more: `plugkit memory list`")
        size += 80
    # Best effort, after the memories: a broken file is mentioned, never silently dropped.
    if problems and len(lines) < max_lines and size + 80 <= max_bytes:
        lines.append(f"- ({len(problems)} memory file(s) unreadable: `plugkit memory list` says why)")
    return "\n".join(lines), shown, len(memories)
