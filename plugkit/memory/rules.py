"""What a memory may be: its fields, its required reasons, and what it must not duplicate.

Pure and table-driven: each rule is a row (name, check) returning a refusal or None,
so the runner, the CLI and the tests share one list and one wording per reason.
"""

import re
from dataclasses import dataclass
from typing import Callable, Optional

TYPES = ("user", "feedback", "project", "reference")
SCOPES = ("project", "user")
MAX_NAME = 64
MAX_DESCRIPTION = 79  # "under 80 characters"
MAX_BODY = 16 * 1024
# Feedback and project memories record a judgement; without the reason and the
# way to act on it, a later session cannot tell when the judgement stops applying.
NEEDS_REASONS = ("feedback", "project")

# Tokens that look like files or code: shared with recall's staleness scan.
SOURCE_EXTENSIONS = frozenset(
    "py pyi js mjs cjs ts tsx jsx go rs c h cc cpp hpp java kt rb php sh bash zsh toml yaml yml "
    "json md rst txt cfg ini sql html css scss lock swift cs lua pl ex exs erl hs ml scala vue "
    "svelte dart zig tf proto gradle mk cmake ipynb env".split())

_HASH = re.compile(r"[0-9a-fA-F]{7,40}")
# "Why:" / "**Why:**" / "- How to apply:" at the start of a line, with text after it.
_WHY = re.compile(r"^[ \t>*_-]*why[*_]*[ \t]*:[*_]*[ \t]*\S", re.IGNORECASE | re.MULTILINE)
_HOW = re.compile(r"^[ \t>*_-]*how to apply[*_]*[ \t]*:[*_]*[ \t]*\S", re.IGNORECASE | re.MULTILINE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029\x85]")


class Refused(ValueError):
    """A memory that breaks a rule; `reason` is written for the agent that tried to save it."""

    def __init__(self, rule: str, reason: str, hint: str = "") -> None:
        super().__init__(reason)
        self.rule, self.reason, self.hint = rule, reason, hint


@dataclass(frozen=True)
class Draft:
    """A memory as asked for, before it is stored (description and scope may be defaulted)."""

    type: str
    name: str
    body: str
    description: Optional[str] = None
    scope: Optional[str] = None


def slug(name: str) -> str:
    """The file stem for a name: lowercase ASCII words joined by '-', at most 64 characters.

    Names are compared by slug, so "Test runner" and "test-runner" are one memory,
    and no name can reach outside the memory directory."""
    words = re.findall(r"[a-z0-9]+", name.lower())
    return "-".join(words)[:MAX_NAME].strip("-")


def scope_for(draft: Draft) -> str:
    """user memories describe the person, so they live user-wide ($PLUGKIT_HOME/memory);
    everything else belongs to the workspace unless the caller asks for "user"."""
    if draft.type == "user":
        return "user"
    return draft.scope or "project"


def default_description(body: str) -> str:
    """The first line with words in it, trimmed to fit, when the caller gave none."""
    for line in body.splitlines():
        text = line.strip().lstrip("#>*-_ ").strip()
        if text and not _WHY.match(line) and not _HOW.match(line):
            return text if len(text) <= MAX_DESCRIPTION else text[:MAX_DESCRIPTION - 1].rstrip() + "…"
    return "(no description)"


def _single_line(value: str) -> bool:
    return not _CONTROL.search(value)


def _check_name(d: Draft) -> Optional[Refused]:
    if not d.name.strip() or not _single_line(d.name):
        return Refused("name", "a name is one line of text")
    if len(d.name) > MAX_NAME:
        return Refused("name", f"a name is at most {MAX_NAME} characters (this one has {len(d.name)})")
    if not slug(d.name):
        return Refused("name", "a name needs at least one letter or digit (it becomes the file name)")
    return None


def _check_type(d: Draft) -> Optional[Refused]:
    if d.type not in TYPES:
        return Refused("type", f"type must be one of {', '.join(TYPES)}")
    if d.scope not in (None,) + SCOPES:
        return Refused("scope", f"scope must be one of {', '.join(SCOPES)}")
    if d.type == "user" and d.scope == "project":
        return Refused("scope", "user memories describe you, not one workspace: they are always user-wide",
                       "drop the scope, or use type feedback/project for a workspace rule")
    return None


def _check_description(d: Draft) -> Optional[Refused]:
    if d.description is None:
        return None
    if not d.description.strip() or not _single_line(d.description):
        return Refused("description", "a description is one non-empty line")
    if len(d.description) > MAX_DESCRIPTION:
        return Refused("description", f"a description is under 80 characters (this one has "
                                      f"{len(d.description)}); put the detail in the text")
    return None


def _check_body(d: Draft) -> Optional[Refused]:
    if not d.body.strip():
        return Refused("text", "the memory's text is empty")
    if len(d.body.encode()) > MAX_BODY:
        return Refused("text", f"a memory's text is at most {MAX_BODY // 1024} KiB; keep one fact per memory")
    return None


def _check_reasons(d: Draft) -> Optional[Refused]:
    if d.type not in NEEDS_REASONS:
        return None
    missing = [label for label, rx in (("Why:", _WHY), ("How to apply:", _HOW)) if not rx.search(d.body)]
    if missing:
        return Refused("reasons", f"{d.type} memories need a line starting with "
                                  f"{' and a line starting with '.join(repr(m) for m in missing)}",
                       "say why it holds and how a later session should act on it")
    return None


def looks_like_path(token: str) -> bool:
    """One word shaped like a file path: a '/' in it, or a known source extension."""
    if not token or any(c.isspace() for c in token) or "://" in token:
        return False
    if "/" in token:
        return any(part for part in token.split("/"))
    stem, dot, ext = token.rpartition(".")
    return bool(dot and stem and ext.lower() in SOURCE_EXTENSIONS)


def _check_derived(d: Draft) -> Optional[Refused]:
    # The repository already holds files and commits; a memory that only points at
    # one adds nothing and goes stale silently. What matters about it must be said.
    token = d.body.strip().strip("`'\"")
    token = re.sub(r":\d+(:\d+)?$", "", token)  # path:line is still only a path
    if _HASH.fullmatch(token):
        return Refused("derived", "the text is only a git hash: the repository already records it "
                                  f"(`git show {token}`); store what matters about that commit instead")
    if looks_like_path(token):
        return Refused("derived", "the text is only a file path: the repository already has the file; "
                                  "store what matters about it (a decision, a pitfall) instead")
    return None


RULES: tuple[tuple[str, Callable[[Draft], Optional[Refused]]], ...] = (
    ("name", _check_name),
    ("type", _check_type),
    ("description", _check_description),
    ("text", _check_body),
    ("reasons", _check_reasons),
    ("derived", _check_derived),
)


def validate(draft: Draft) -> None:
    """Raise the first Refused among the rules, in table order."""
    for _name, check in RULES:
        refusal = check(draft)
        if refusal is not None:
            raise refusal


def check_unique(draft: Draft, existing_scope: Optional[str], replace: bool) -> None:
    """Names are unique by slug across both scopes, so `show NAME` is never ambiguous."""
    if existing_scope is not None and not replace:
        where = "user-wide" if existing_scope == "user" else "in this workspace"
        raise Refused("unique", f"a memory named like {draft.name!r} already exists {where}",
                      "pick another name, `plugkit memory forget NAME` first, or add --replace")
