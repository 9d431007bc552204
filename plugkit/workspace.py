"""Which directory is a cwd's workspace: one marker set and one find_root for the gates, memory and
language plugins, and the places that are never a workspace (/, $HOME, $PLUGKIT_HOME).

The workspace of a cwd is the nearest directory at or above realpath(cwd) holding a marker, else
realpath(cwd) itself. Markers are what a person (or plugkit on a person's request) puts in a
project: `.git`, `.prd`, and under `.plugkit/` the files `config.toml` and `state.json` and the
directories `lang/` and `memory/`. A bare `.plugkit/` is not a marker: the browser executor
creates `.plugkit/evidence/screenshots` in whatever cwd a session has, and that must not move a
workspace. So in `repo/src`, with `repo/.git` and a bare `repo/src/.plugkit/`, the gates, the
memories and the language plugins all belong to `repo`.

Never a workspace: the filesystem root, $HOME and $PLUGKIT_HOME (or below it). Markers there are
ignored, and a cwd that is one of them is refused (NotAWorkspace): a gate or memory call with
cwd "/" would otherwise plant `/.prd` and `/.plugkit/`, and from then on every unmarked directory
on the machine would share that one workspace; a dotfiles `~/.git` would do the same to $HOME.

Standard library only.
"""

from __future__ import annotations  # the annotations stay text: `typing` costs the client ~3 ms to import

import os

from plugkit import paths

TYPE_CHECKING = False  # typing.TYPE_CHECKING's idiom without importing typing
if TYPE_CHECKING:  # the names the text annotations use, for readers and linters only
    from typing import Mapping, Optional

STATE_DIR = ".plugkit"
PRD_FILE = ".prd"
# Markers directly in a directory, then those inside its .plugkit/ (looked for only when it exists).
TOP_MARKERS = (".git", PRD_FILE)
STATE_MARKERS = ("config.toml", "state.json", "lang", "memory")
MARKERS = (*TOP_MARKERS, *(os.path.join(STATE_DIR, m) for m in STATE_MARKERS))
HOW_TO_PICK = ("run it from your project's directory (or pass --cwd DIR); a directory becomes a "
               "workspace with `git init` or a .plugkit/config.toml in it")


class NotAWorkspace(ValueError):
    """The cwd is a directory that must never hold workspace files; str() is the one-line reason."""


# (realpath, what it is, whether everything below it is refused too), besides the filesystem root.
Never = "tuple[tuple[str, str, bool], ...]"


# (state dir, $HOME) as named -> their realpaths: each exec asks, and a realpath is a stat per
# path component. A dict, not functools (the client imports this module on its hot path).
_NEVER: dict = {}


def _never(env: Mapping[str, str]) -> Never:
    key = (paths.home(env), env.get("HOME") or "")
    found = _NEVER.get(key)
    if found is None:
        # Below $HOME is where projects live; below the state dir is only plugkit's own files.
        places = [(os.path.realpath(key[0]), "plugkit's state directory ($PLUGKIT_HOME)", True)]
        if key[1]:
            places.append((os.path.realpath(key[1]), "your home directory ($HOME)", False))
        found = tuple(places)
        if len(_NEVER) < 64:  # a test may make a new $HOME each time: the cache stays small
            _NEVER[key] = found
    return found


def _why(path: str, never: Never) -> Optional[str]:
    if path == os.path.dirname(path):
        return "the filesystem root"
    for place, what, below in never:
        if path == place or (below and path.startswith(place + os.sep)):
            return what
    return None


def refusal(path: str, env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """Why the realpath `path` can never be a workspace root, or None when it can be one."""
    return _why(path, _never(os.environ if env is None else env))


def check_root(path: str, env: Optional[Mapping[str, str]] = None) -> None:
    """Raise NotAWorkspace when plugkit must not create workspace files in `path` (a realpath)."""
    _check(path, _never(os.environ if env is None else env))


def _check(path: str, never: Never) -> None:
    why = _why(path, never)
    if why is not None:
        raise NotAWorkspace(f"cwd {path} is {why}: plugkit keeps no .prd or .plugkit/ there; {HOW_TO_PICK}")


def find_root(cwd: str, env: Optional[Mapping[str, str]] = None) -> str:
    """The workspace root of `cwd` (a realpath); NotAWorkspace when cwd is /, $HOME or $PLUGKIT_HOME."""
    never = _never(os.environ if env is None else env)
    real = os.path.realpath(cwd)
    _check(real, never)
    probe = real
    while True:
        if _why(probe, never) is None and _marked(probe):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return real
        probe = parent


def _marked(folder: str) -> bool:
    if any(os.path.lexists(os.path.join(folder, m)) for m in TOP_MARKERS):
        return True
    state = os.path.join(folder, STATE_DIR)
    return os.path.isdir(state) and any(os.path.lexists(os.path.join(state, m)) for m in STATE_MARKERS)


def root_or_none(cwd: str, env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """find_root, or None where there can be no workspace (for reads that simply find nothing)."""
    try:
        return find_root(cwd, env)
    except NotAWorkspace:
        return None
