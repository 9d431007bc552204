"""The work policy's ref row: git commands that move, create or delete a ref other than the
worker's own branch. A worktree shares every ref with the person's checkout, so `git
update-ref refs/heads/main HEAD` in it lands work no check has seen; the runner restores
any such move when the worker ends (runner/core/work/refs.py) and this row tells the agent
before it tries. Pure: the own branch is named by the worktree (`.plugkit/worktrees/<id>`
holds branch `plugkit/<id>`, as runner/core/work/attempt.py makes them)."""

from __future__ import annotations

import os

from plugkit.work.policy.checks import git_parts
from plugkit.work.policy.paths import Scope
from plugkit.work.policy.shell import Cmd

BRANCH_PREFIX = "plugkit/"
# git subcommand -> its options that take a value (their value is no ref name).
_VALUED = {"update-ref": {"-m"}, "branch": {"-u", "--set-upstream-to", "--track", "-t", "--format", "--sort"},
           "tag": {"-m", "-F", "--message", "--file", "-u", "--local-user", "--format", "--sort", "--cleanup"},
           "checkout": {"--conflict", "--pathspec-from-file"}, "switch": {"--conflict"},
           "push": {"-o", "--push-option", "--repo", "--receive-pack", "--exec"},
           "fetch": {"--depth", "--deepen", "--shallow-since", "--shallow-exclude", "-j", "--jobs", "--upload-pack",
                     "--refmap", "--negotiation-tip", "-o", "--server-option"},
           "worktree": {"--reason"}}
_BRANCH_READ = ("--list", "-l", "--show-current", "--contains", "--no-contains", "--merged", "--no-merged",
                "--points-at", "-u", "--set-upstream-to", "--unset-upstream", "--edit-description")
_BRANCH_ALL = frozenset({"-m", "-M", "--move", "-c", "-C", "--copy", "-d", "-D", "--delete"})
_TAG_READ = ("-l", "--list", "-v", "--verify", "--contains", "--no-contains", "--points-at", "--merged",
             "--no-merged", "-n")
_NEW_BRANCH = frozenset({"-b", "-B", "-c", "-C", "--orphan"})
_REWRITERS = {"filter-branch": "rewrites every branch", "filter-repo": "rewrites every branch",
              "replace": "writes refs/replace/"}  # not notes: they annotate commits and land nothing
_LOCAL = (".", "/", "./", "../", "file:")


def own_branch(scope: Scope) -> str:
    return BRANCH_PREFIX + os.path.basename(scope.root)


def _words(sub: str, args: tuple[str, ...]) -> list[str]:
    """Positional words (no options, no option values), up to `--`."""
    valued, out, skip = _VALUED.get(sub, set()), [], False
    for w in args:
        if skip:
            skip = False
        elif w == "--":
            break
        elif w in valued:
            skip = True
        elif not w.startswith("-"):
            out.append(w)
    return out


def _has(args: tuple[str, ...], flags) -> bool:
    return any(w in flags or w.startswith(tuple(f + "=" for f in flags if f.startswith("--"))) for w in args)


def _named(sub: str, args: tuple[str, ...]) -> list[str] | str:
    """The refs the command writes (names as given), or a reason it cannot be judged."""
    words = _words(sub, args)
    if sub == "update-ref":
        return "--stdin names its refs on stdin" if "--stdin" in args else words[:1]
    if sub == "symbolic-ref":
        return words[1:2] if len(words) > 1 else (words[:1] if _has(args, ("-d", "--delete")) else [])
    if sub == "branch":
        if _has(args, _BRANCH_READ) or not words:
            return []
        return words if _has(args, _BRANCH_ALL) else words[:1]
    if sub == "tag":
        if _has(args, _TAG_READ) or not words:
            return []
        return [f"refs/tags/{w}" for w in (words if _has(args, ("-d", "--delete")) else words[:1])]
    if sub in ("checkout", "switch"):
        if "--ignore-other-worktrees" in args:
            return "--ignore-other-worktrees works on a branch another checkout has"
        new = [args[i + 1] for i, w in enumerate(args[:-1]) if w in _NEW_BRANCH]
        if new or sub == "checkout":
            return new
        return [] if _has(args, ("-d", "--detach")) else words[:1]
    if sub == "worktree" and args[:1] == ("add",):
        return [args[i + 1] for i, w in enumerate(args[:-1]) if w in ("-b", "-B")]
    if sub == "rebase" and "--update-refs" in args:
        return "--update-refs moves every branch on the way"
    if sub in ("push", "fetch"):
        return _refspecs(sub, words)
    if sub in _REWRITERS:
        return _REWRITERS[sub]
    return []


def _refspecs(sub: str, words: list[str]) -> list[str]:
    """Local refs a push into this repository, or a fetch into named local refs, writes."""
    if not words:
        return []
    remote, specs = words[0], words[1:]
    if sub == "push" and not remote.startswith(_LOCAL):
        return []  # another repository: the push_force row judges it
    out = []
    for spec in specs:
        dst = spec.lstrip("+").rpartition(":")[2] if ":" in spec else (spec if sub == "push" else "")
        if dst and not dst.startswith("refs/remotes/"):
            out.append(dst)
    return out


def other_ref(cmd: Cmd, scope: Scope) -> str | None:
    if cmd.prog != "git" or cmd.opaque:
        return None
    sub, args, _ = git_parts(cmd.argv)
    named = _named(sub, args)
    mine = own_branch(scope)
    if isinstance(named, str):
        return f"{named}; your branch is {mine}"
    others = [n for n in named if n not in (mine, f"refs/heads/{mine}", "HEAD", "@")]
    return f"`{others[0]}` is not your branch {mine}" if others else None
