"""Memories on disk: one Markdown file with front matter per memory, and the MEMORY.md index.

Where: a workspace's `.plugkit/memory/` (scope "project") or `$PLUGKIT_HOME/memory/`
(scope "user"). The workspace is plugkit.workspace.find_root(cwd), the gates' workspace; a
cwd of /, $HOME or $PLUGKIT_HOME has none, so only user-wide memories are there. Every change happens under an flock on
the directory's `.lock`, writes temp-then-rename, and rewrites MEMORY.md the same
way, so a reader (an agent, a hook) never sees half a file. Reads take no lock.
"""

import datetime
import json
import os
import re
import secrets
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional

from plugkit import confined
from plugkit.memory import rules
from plugkit.memory.rules import Draft
from plugkit.workspace import STATE_DIR, check_root, root_or_none
from plugkit import locks

MEMORY_DIR = os.path.join(STATE_DIR, "memory")
INDEX = "MEMORY.md"
INDEX_MAX_LINES = 200
LINE_MAX = 149  # "each under 150 characters"
FIELDS = ("name", "description", "type", "created", "updated")
INDEX_HEADER = ("# Memory index",
                "<!-- rewritten by plugkit on every change, newest first; edit the memory files -->")


class NotFound(LookupError):
    pass


@dataclass(frozen=True)
class Memory:
    name: str
    description: str
    type: str
    created: str
    updated: str
    body: str
    scope: str = "project"
    path: str = ""

    @property
    def key(self) -> str:
        return rules.slug(self.name)


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def find_workspace(cwd: str) -> Optional[str]:
    """The workspace root of cwd (plugkit.workspace.find_root); None for /, $HOME, $PLUGKIT_HOME."""
    return root_or_none(cwd)


# --- front matter: the small YAML subset we write, read back exactly ------------------------

_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9 _.,()/+-]*")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "~"}


def _scalar(value: str) -> str:
    # Plain when YAML would read it back unchanged; otherwise a double-quoted string.
    # JSON's string syntax is a subset of YAML's double-quoted style, so any YAML reader
    # (and ours) gets the same text back, colons, quotes and '#' included.
    if _PLAIN.fullmatch(value) and value == value.strip() and value.lower() not in _YAML_WORDS \
            and not re.fullmatch(r"[-+0-9.eE_]+", value):
        return value
    return json.dumps(value, ensure_ascii=False)


def _unscalar(raw: str) -> str:
    raw = raw.strip()
    if raw.startswith('"'):
        return json.loads(raw)
    if raw.startswith("'") and raw.endswith("'") and len(raw) >= 2:
        return raw[1:-1].replace("''", "'")  # YAML single quotes: '' is one quote
    return raw


def render(m: Memory) -> str:
    head = [f"{key}: {_scalar(getattr(m, key))}" for key in FIELDS]
    return "---\n" + "\n".join(head) + "\n---\n\n" + m.body.strip("\n") + "\n"


def parse(text: str, scope: str = "project", path: str = "") -> Memory:
    """A memory file back into a Memory; ValueError says what is wrong with it."""
    # split("\n"), not splitlines(): U+2028 and friends inside a value are not line ends here.
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise ValueError("no front matter (the file must start with a '---' line)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise ValueError("front matter is not closed by a '---' line") from None
    fields: dict[str, str] = {}
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, colon, raw = line.partition(":")
        if not colon:
            raise ValueError(f"front matter line without 'key: value': {line[:40]!r}")
        fields[key.strip()] = _unscalar(raw)
    missing = [k for k in ("name", "type") if not fields.get(k)]
    if missing:
        raise ValueError(f"front matter lacks {', '.join(missing)}")
    if fields["type"] not in rules.TYPES:
        raise ValueError(f"unknown type {fields['type']!r}")
    body = "\n".join(lines[end + 1:]).strip("\n")
    stamp = fields.get("updated") or fields.get("created") or ""
    return Memory(name=fields["name"], description=fields.get("description") or rules.default_description(body),
                  type=fields["type"], created=fields.get("created") or stamp,
                  updated=stamp, body=body, scope=scope, path=path)


# --- the index -------------------------------------------------------------------------------

def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(0, width - 1)].rstrip() + "…"


def index_line(m: Memory, flag: str = "", width: int = LINE_MAX) -> str:
    """`- [type] name: description (file.md)`, the description trimmed so the line fits."""
    head = f"- [{m.type}] {_fit(m.name, 64)}: "
    tail = f" ({os.path.basename(m.path) or m.key + '.md'})" + (f" {flag}" if flag else "")
    room = width - len(head) - len(tail)
    if room < 8:  # a long flag: keep the name and the flag, drop the description
        return _fit(head.rstrip(": ") + tail, width)
    return head + _fit(m.description, room) + tail


def render_index(memories: list[Memory]) -> str:
    newest = sorted(memories, key=lambda m: m.updated, reverse=True)
    room = INDEX_MAX_LINES - len(INDEX_HEADER)
    lines = [index_line(m) for m in newest[:room]]
    if len(newest) > room:  # the last slot says what was left out, and where to find it
        lines[-1] = f"- ... {len(newest) - room + 1} older memories: `plugkit memory list` shows all"
    return "\n".join(INDEX_HEADER + tuple(lines)) + "\n"


# --- the store -------------------------------------------------------------------------------

def write_atomic(path: str, text: str, mode: int) -> None:
    """Temp file in the same directory, fsync, rename: readers see the old or the new file."""
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


class MemoryStore:
    """The memories one workspace can see: its own and the user-wide ones."""

    def __init__(self, workspace: Optional[str], home: str, cwd: Optional[str] = None) -> None:
        self.workspace = workspace  # None: the cwd can have no workspace (/, $HOME), user-wide only
        self.cwd = cwd or workspace or ""
        self.dirs = {"project": os.path.join(workspace, MEMORY_DIR) if workspace else "",
                     "user": os.path.join(home, "memory")}
        # Workspace memories are project files (a team may commit them); user-wide
        # ones sit in the private state dir and stay private.
        self.modes = {"project": (0o755, 0o644), "user": (0o700, 0o600)}

    @classmethod
    def for_cwd(cls, cwd: str, home: str) -> "MemoryStore":
        return cls(find_workspace(cwd), home, cwd)

    def load(self, scope: str) -> tuple[list[Memory], list[str]]:
        """(memories, problems): an unreadable file is reported, never silently skipped."""
        folder = self.dirs[scope]
        if not folder:
            return [], []
        try:
            names = sorted(os.listdir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return [], []
        found, problems = [], []
        for fname in names:
            if not fname.endswith(".md") or fname == INDEX or fname.startswith("."):
                continue
            path = os.path.join(folder, fname)
            try:
                # Never through a link out, never a FIFO: a sandbox writes its worktree's memories.
                root = self.workspace if scope == "project" and self.workspace else os.path.dirname(folder)
                with confined.open_beneath(root, path) as fh:
                    found.append(parse(fh.read().decode("utf-8"), scope, path))
            except (OSError, ValueError) as exc:
                problems.append(f"{scope} memory {fname}: {exc}")
        return found, problems

    def all(self) -> tuple[list[Memory], list[str]]:
        """Both scopes, newest first; a workspace memory shadows a user-wide one of the same name."""
        project, p1 = self.load("project")
        user, p2 = self.load("user")
        keys = {m.key for m in project}
        merged = project + [m for m in user if m.key not in keys]
        return sorted(merged, key=lambda m: m.updated, reverse=True), p1 + p2

    def get(self, name: str) -> Memory:
        key = rules.slug(name)
        for m in self.all()[0]:
            if m.key == key or os.path.basename(m.path) == f"{key}.md":
                return m
        raise NotFound(f"no memory named {name!r} in this workspace or user-wide")

    def _find(self, key: str) -> Optional[Memory]:
        for scope in ("project", "user"):
            for m in self.load(scope)[0]:
                if m.key == key:
                    return m
        return None

    @contextmanager
    def _locked(self, scopes: list[str]) -> Iterator[None]:
        # Always in table order, so two writers locking both scopes cannot deadlock.
        with ExitStack() as stack:
            for scope in ("project", "user"):
                if scope not in scopes:
                    continue
                os.makedirs(self.dirs[scope], mode=self.modes[scope][0], exist_ok=True)
                stack.enter_context(locks.exclusive(os.path.join(self.dirs[scope], ".lock")))
            yield

    def _existing_scopes(self, also: str) -> list[str]:
        return [s for s in ("project", "user") if s == also or (self.dirs[s] and os.path.isdir(self.dirs[s]))]

    def add(self, draft: Draft, replace: bool = False, now: Optional[str] = None) -> Memory:
        """Validate, store and reindex; with replace, an existing memory of that name is
        overwritten (keeping its created time), even if it moves scope."""
        rules.validate(draft)
        scope = rules.scope_for(draft)
        if not self.dirs[scope]:
            check_root(os.path.realpath(self.cwd))  # NotAWorkspace: the reason, and how to pick a root
        stamp = now or now_iso()
        with self._locked(self._existing_scopes(scope)):
            old = self._find(rules.slug(draft.name))  # under the lock: no two writers both see "free"
            rules.check_unique(draft, old.scope if old else None, replace)
            path = os.path.join(self.dirs[scope], rules.slug(draft.name) + ".md")
            memory = Memory(name=draft.name.strip(), type=draft.type, scope=scope, path=path,
                            description=(draft.description or rules.default_description(draft.body)).strip(),
                            created=old.created if old else stamp, updated=stamp, body=draft.body.strip("\n"))
            write_atomic(path, render(memory), self.modes[scope][1])
            if old is not None and old.path != path:
                os.unlink(old.path)
                self._reindex(old.scope)
            self._reindex(scope)
        return memory

    def forget(self, name: str) -> Memory:
        memory = self.get(name)
        with self._locked([memory.scope]):
            try:
                os.unlink(memory.path)
            except FileNotFoundError:
                raise NotFound(f"no memory named {name!r} (it was just removed)") from None
            self._reindex(memory.scope)
        return memory

    def _reindex(self, scope: str) -> None:
        """Called with the scope's lock held."""
        memories, _problems = self.load(scope)
        write_atomic(os.path.join(self.dirs[scope], INDEX), render_index(memories), self.modes[scope][1])
