"""`plugkit install --platform P [--project | --user] [--print] [--uninstall]`: write an agent
platform's hook configuration so that its hooks call `plugkit hook <Event> --platform P`.

One row per platform: its `hooks` fact in plugkit/hosts.py (file, format, events with the
tool roles they match, timeouts). Merging keeps every setting that is not ours; ours are
recognised by their command (`<...>plugkit hook ...`), so a second install replaces them
(idempotent) and --uninstall removes exactly those, plus any group or key left empty by
their removal. Codex's TOML cannot be rewritten without a TOML writer, so there plugkit
owns one marked block at the end of the file; the result is parsed back with tomllib before anything is written.

The command written is client/hooks/install_command.py's.
"""

import json
import os
import sys

from client.args import FLAG, VALUE, UsageError, parse_or_help, suggest
from client.hooks import install_hosts
# What install writes and how it knows its own: apart, because install_hosts needs it too.
from client.hooks.install_command import is_ours, script_command
from client.wire.rpc import ClientError
from plugkit.host_row import Hooks
from plugkit.host_tools import matcher
from plugkit.hosts import HOSTS


class Target:
    """A host's hooks fact (plugkit/hosts.py) with each event's matcher spelled out: `path`: the
    project's shared file; `personal`: the host's own per-person file in the project (not
    committed), where --project writes when the host has one."""
    __slots__ = ("fmt", "path", "events", "timeout_scale", "unit", "named", "note", "personal")

    def __init__(self, platform: str, hooks: Hooks) -> None:
        self.fmt, self.path, self.personal, self.note = hooks.fmt, hooks.path, hooks.personal, hooks.note
        self.timeout_scale, self.unit, self.named = hooks.timeout_scale, hooks.unit, hooks.named
        # Tool matchers: the host's tools in those roles, from its row (plugkit/host_tools.py).
        self.events = tuple((event, matcher(platform, roles) if roles else None, timeout)
                            for event, roles, timeout in hooks.events)

    @property
    def project_path(self) -> str:
        """Where `--project` (the default) writes, relative to the workspace."""
        return self.personal or self.path


TARGETS = {h.platform: Target(h.platform, h.hooks) for h in HOSTS}


def _where(target: Target) -> str:
    said = {"plugin": " (a plugin relaying to `plugkit hook`)"}.get(target.fmt, "")
    return target.project_path + (" (your own, not committed)" if target.personal else said)


USAGE = f"""usage: plugkit install --platform PLATFORM|auto [--project | --user]
                       [--print] [--uninstall]

Writes the platform's hook configuration (merged: your other settings stay):
{chr(10).join(f"  {platform:<12} {_where(target)}" for platform, target in TARGETS.items())}
  auto         every platform the workspace is configured for or whose program is on PATH
under the current directory (--project, the default) or your home directory (--user).
  --print      show the file as it would be written; change nothing
  --uninstall  remove the hooks plugkit added, and only those"""
OPTIONS = {"--platform": VALUE, "--project": FLAG, "--user": FLAG, "--print": FLAG, "--uninstall": FLAG}
BEGIN = "# >>> plugkit hooks (written by `plugkit install --platform codex`; --uninstall removes this block)"
END = "# <<< plugkit hooks"


def main(argv: list[str]) -> int:
    opts, _ = parse_or_help(argv, OPTIONS, USAGE, max_pos=0)
    platform = opts.get("platform")
    if platform == "auto":
        return install_auto(argv)
    if platform not in TARGETS:
        said = f"unknown platform {platform!r}{suggest(str(platform), [*TARGETS, 'auto'])}; " if platform else ""
        raise UsageError(f"{said}name the platform: --platform {'|'.join(TARGETS)}|auto")
    if opts.get("project") and opts.get("user"):
        raise UsageError("give --project or --user, not both")
    target = TARGETS[str(platform)]
    user = bool(opts.get("user"))
    base = os.path.expanduser("~") if user else os.getcwd()
    uninstall = bool(opts.get("uninstall"))
    if user:
        paths = [install_hosts.USER_PATHS.get(str(platform), target.path)]
    else:  # uninstall also clears the shared file, where an older plugkit wrote
        paths = [target.project_path] + ([target.path] if uninstall and target.personal else [])
    for rel in paths:
        _one(os.path.join(base, rel), base, target, str(platform), uninstall, bool(opts.get("print")))
    return 0


def _linked(path: str, base: str) -> str | None:
    """The first link on the way from base down to path (path included), or None. A project's
    hooks file is written by the runner too, outside any sandbox, into a worker's worktree whose
    files the worker wrote or committed: a `.claude` linked to the user's own must not be followed."""
    rel = os.path.relpath(path, base)
    here = base
    for part in rel.split(os.sep):
        here = os.path.join(here, part)
        if os.path.islink(here):
            return here
    return None


def _one(path: str, base: str, target: Target, platform: str, uninstall: bool, show: bool) -> None:
    link = _linked(path, base) if base == os.getcwd() else None  # --user: a dotfile manager's links are the person's
    if link is not None:
        raise ClientError(f"{link} is a symbolic link: plugkit will not read or write hooks through it; "
                          "make it a real file or directory, then install again")
    old = _read(path)
    command = script_command()
    merge = {"json": _merge_json, "toml": _merge_toml, **install_hosts.MERGERS}[target.fmt]
    new, removed = merge(path, old, target, platform, command, uninstall)
    if show:
        print(f"# {path}" + (" (unchanged)" if new == old else " (removed)" if old and not new else ""))
        print(new, end="" if new.endswith("\n") else "\n")
        print("# --print: nothing was written", file=sys.stderr)
        return
    if old and removed and not new.strip("{}\n \t"):
        _remove(path, base)  # nothing but ours was in it: the file and the directories made for it go
    elif new != old:
        _write(path, new)
    if uninstall:
        print(f"plugkit: removed {removed} plugkit hook(s) from {path}" if removed
              else f"plugkit: no plugkit hooks in {path}; nothing to remove")
    else:
        state = "already up to date" if new == old else "installed"
        print(f"plugkit: {len(target.events)} {platform} hooks {state} in {path} "
              f"(timeouts in {target.unit}); they run {command} hook <Event> --platform {platform}; "
              f"undo with: plugkit install --platform {platform}{' --user' if base != os.getcwd() else ''} --uninstall")
        if target.note:
            print(f"plugkit: {target.note}")


def install_auto(argv: list[str]) -> int:
    """--platform auto: the same install for every platform the workspace shows."""
    base = os.path.expanduser("~") if "--user" in argv else os.getcwd()
    found = install_hosts.detect(base)
    if not found:
        raise UsageError(f"no agent host found here (none of their directories in {base}, none of their programs "
                         f"on PATH); name one: --platform {'|'.join(TARGETS)}")
    rest = [a for i, a in enumerate(argv) if a != "--platform" and not a.startswith("--platform=")
            and not (i and argv[i - 1] == "--platform")]
    for platform in found:
        main(["--platform", platform, *rest])
    return 0


def _remove(path: str, base: str) -> None:
    """The file, then each directory above it up to `base` that this leaves empty (`.claude/`,
    `.opencode/plugins/`): what install made, uninstall takes away."""
    try:
        os.unlink(path)
    except OSError as exc:
        raise ClientError(f"cannot remove {path}: {exc.strerror or exc}") from None
    parent = os.path.dirname(path)
    while parent.startswith(base + os.sep) and parent != base:
        try:
            os.rmdir(parent)  # only an empty one: a person's other files keep it
        except OSError:
            break
        parent = os.path.dirname(parent)


def _entry(target: Target, platform: str, command: str, event: str, timeout: int) -> dict:
    hook = {"type": "command", "command": f"{command} hook {event} --platform {platform}",
            "timeout": timeout * target.timeout_scale}
    if target.named:
        hook = {"name": f"plugkit-{event}", **hook, "description": "plugkit: exec: routing and lifecycle gates"}
    return hook


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ClientError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None


def _write(path: str, text: str) -> None:
    """Atomically, keeping the file's mode: a crash mid-write must not leave half a settings file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    tmp = f"{path}.plugkit-{os.getpid()}.tmp"
    try:
        try:  # never through a link planted at the temporary name
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        except FileExistsError:
            os.unlink(tmp)  # a stale one (or a link: unlink removes the link, not its target)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise ClientError(f"cannot write {path}: {exc.strerror or exc}") from None


def _merge_json(path: str, old: str, target: Target, platform: str, command: str,
                uninstall: bool) -> tuple[str, int]:
    try:
        settings = json.loads(old) if old.strip() else {}
    except ValueError as exc:
        raise ClientError(f"{path} is not valid JSON ({exc}); fix it first, plugkit will not overwrite it") from None
    if not isinstance(settings, dict) or not isinstance(settings.get("hooks", {}), dict):
        raise ClientError(f"{path}: expected a JSON object with a \"hooks\" object; plugkit will not overwrite it")
    hooks = settings.get("hooks", {})
    removed = 0
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):  # e.g. Gemini's "enabled": true
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                rest = [h for h in group["hooks"] if not (isinstance(h, dict) and is_ours(h.get("command")))]
                removed += len(group["hooks"]) - len(rest)
                if not rest and group["hooks"]:
                    continue  # a group holding only our hooks was ours
                group = {**group, "hooks": rest}
            kept.append(group)
        if kept:
            hooks[event] = kept
        elif groups:
            del hooks[event]
    if not uninstall:
        for event, match, timeout in target.events:
            group = {"matcher": match} if match else {}
            group["hooks"] = [_entry(target, platform, command, event, timeout)]
            hooks.setdefault(event, []).append(group)
    if hooks:
        settings["hooks"] = hooks
    else:
        settings.pop("hooks", None)
    new = json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
    # An unchanged configuration is left byte for byte as it was (formatting included).
    if old.strip() and settings == json.loads(old):
        return old, removed
    return (new if settings or old.strip() else ""), removed


def _toml_block(target: Target, platform: str, command: str) -> str:
    lines = [BEGIN]
    for event, match, timeout in target.events:
        lines += ["", f"[[hooks.{event}]]"]
        if match:
            lines.append(f"matcher = {json.dumps(match)}")
        hook = _entry(target, platform, command, event, timeout)
        # json.dumps yields valid TOML basic strings: the same escapes (\" \\ \uXXXX).
        lines += ["", f"[[hooks.{event}.hooks]]", 'type = "command"', f"command = {json.dumps(hook['command'])}",
                  f"timeout = {hook['timeout']}"]
    return "\n".join(lines + [END]) + "\n"


def _without_block(text: str) -> tuple[str, int]:
    start = text.find(BEGIN)
    if start < 0:
        return text, 0
    end = text.find(END, start)
    after = "" if end < 0 else text[end + len(END):].removeprefix("\n")
    before = text[:start]
    if before.endswith("\n\n"):
        before = before[:-1]  # the blank line install put in front of the block
    return before + after, text[start:end].count("[[hooks.") // 2 or 1


def _merge_toml(path: str, old: str, target: Target, platform: str, command: str,
                uninstall: bool) -> tuple[str, int]:
    import tomllib

    try:
        tomllib.loads(old)
    except tomllib.TOMLDecodeError as exc:
        raise ClientError(f"{path} is not valid TOML ({exc}); fix it first, plugkit will not rewrite it") from None
    base, removed = _without_block(old)
    if uninstall:
        return base, removed
    if base and not base.endswith("\n"):
        base += "\n"
    new = base + ("\n" if base else "") + _toml_block(target, platform, command)
    try:
        tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        raise ClientError(f"{path} already defines hooks in a form plugkit cannot add to ({exc}); "
                          "use [[hooks.<Event>]] tables, or run with --print and merge by hand") from None
    return new, removed
