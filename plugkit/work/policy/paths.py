"""Where a word of a worker's command points, seen from its worktree: inside, outside, or unknown.

A shell word is expanded as far as its text tells (`~`, `$HOME`, one brace group, a glob by its
fixed prefix); any other `$VAR`, `$(..)` or backtick is UNKNOWN (the policy denies what it cannot
tell only where a wrong guess would destroy something). Paths are resolved with realpath, so a
symlink inside the worktree pointing outside is outside.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field

from plugkit.hosts import HOSTS
from plugkit.work.policy.shell import dynamic

INSIDE, OUTSIDE, UNKNOWN = "inside", "outside", "unknown"
# The temp dir and /dev/null & co: a worker may write there, not delete trees there (other
# processes' files live in /tmp too).
SCRATCH = "scratch"
_RANK = {OUTSIDE: 0, UNKNOWN: 1, SCRATCH: 2, INSIDE: 3}  # the worst answer of several wins
# Every workspace path a host reads its hooks from (each row's hooks fact, plugkit/hosts.py),
# where `plugkit install` puts them in a worktree: the configuration that makes this policy run
# at all, so a worker never edits it.
HOOK_CONFIGS = tuple(dict.fromkeys(path for h in HOSTS for path in h.hooks.reads))
DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"})
_HOME_VAR = re.compile(r"\$(?:HOME\b|\{HOME\})")


@dataclass(frozen=True)
class Scope:
    """The worker's worktree and the temp dir, symlinks resolved, and where a word points."""

    root: str
    tmp: str
    # The repository the worktree belongs to (`<repo>/.plugkit/worktrees/<id>`): never scratch
    # space, even when it lies under the temp dir.
    repo: str = ""
    # One judgment resolves the same directory many times (every command in it); realpath is
    # lstat per component, so it is asked once. Per judgment: the disk may change between calls.
    _seen: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def of(cls, worktree: str) -> "Scope":
        root = os.path.realpath(worktree)
        marker = os.sep + os.path.join(".plugkit", "worktrees") + os.sep
        return cls(root, os.path.realpath(tempfile.gettempdir()),
                   root.split(marker, 1)[0] if marker in root + os.sep else root)

    def where(self, word: str, cwd: str | None, shell: bool = True) -> tuple[str, str]:
        """(INSIDE | SCRATCH | OUTSIDE | UNKNOWN, the path it resolved to). In shell words, `~`,
        `$HOME`, braces and globs are expanded as far as the text tells (a glob by its fixed prefix)."""
        if shell:
            word = _HOME_VAR.sub(lambda m: os.path.expanduser("~"), word)
            if dynamic(word):
                return UNKNOWN, word
            found = sorted((self._one(_glob_base(alt), cwd) for alt in _braces(word)),
                           key=lambda r: (_RANK[r[0]], r[1] != self.root))
            return found[0]
        return self._one(word, cwd)

    def hook_config(self, path: str, deletes: bool = False) -> str | None:
        """The hook configuration a resolved path is (or holds, when the path is deleted or moved:
        `rm -rf .claude` matters only where .claude/settings.json exists)."""
        if not path.startswith(self.root + os.sep):
            return None
        rel = path[len(self.root) + 1:]
        return next((c for c in HOOK_CONFIGS if rel == c or rel.startswith(c + os.sep) or (
            deletes and c.startswith(rel + os.sep) and os.path.lexists(os.path.join(self.root, c)))), None)

    def _one(self, path: str, cwd: str | None) -> tuple[str, str]:
        key = (path, cwd)
        if key not in self._seen:
            self._seen[key] = self._resolve(path, cwd)
        return self._seen[key]

    def _resolve(self, path: str, cwd: str | None) -> tuple[str, str]:
        path = os.path.expanduser(path)
        if path.startswith("~"):
            return UNKNOWN, path  # ~user of a user this machine does not know
        if not os.path.isabs(path) and cwd is None:
            return UNKNOWN, path
        full = os.path.normpath(os.path.join(cwd or "/", path))
        if full in DEVICES or full.startswith("/dev/fd/"):
            return SCRATCH, full
        real = os.path.realpath(full)  # a symlink inside the worktree may point anywhere
        if real == self.root or real.startswith(self.root + os.sep):
            return INSIDE, real
        in_repo = bool(self.repo) and (real == self.repo or real.startswith(self.repo + os.sep))
        return (SCRATCH if real.startswith(self.tmp + os.sep) and not in_repo else OUTSIDE), real


def _braces(word: str) -> list[str]:
    """`a{b,c}d` -> [abd, acd] (the first brace group; a nested or range group is kept whole)."""
    i = word.find("{")
    j = word.find("}", i + 1)
    if i < 0 or j < 0 or "{" in word[i + 1:j] or "," not in word[i:j]:
        return [word]
    return [word[:i] + alt + word[j + 1:] for alt in word[i + 1:j].split(",")]


def _glob_base(word: str) -> str:
    """What a glob can match, as a child of the directory it lists: `../*` -> `../*`, `/*` -> `/*`.
    A component like `.*` or `..?` may match `..` (bash before 5.2 did), so it counts as `..`;
    `.git*` cannot."""
    k = min((word.find(ch) for ch in "*?[" if ch in word), default=-1)
    if k < 0:
        return word
    cut = word.rfind("/", 0, k) + 1
    base = word[:cut] or "."
    return os.path.join(base, "..") if word[cut:k] in (".", "..") else os.path.join(base, "*")


def where_text(word: str, status: str, path: str) -> str:
    return f"cannot tell where `{word}` points" if status == UNKNOWN else f"`{word}` is {path}"


def options_end(argv: tuple[str, ...]) -> int:
    return argv.index("--") if "--" in argv else len(argv)


def operands(argv: tuple[str, ...]) -> list[str]:
    """Non-option words (a lone `-` is one), and every word after `--`."""
    end = options_end(argv)
    return [w for w in argv[1:end] if not w.startswith("-") or w == "-"] + list(argv[end + 1:])


def short_flags(argv: tuple[str, ...]) -> str:
    return "".join(w[1:] for w in argv[1:options_end(argv)] if w.startswith("-") and not w.startswith("--"))
