"""The install formats of the hosts added after the first four (Cursor, Copilot CLI,
OpenCode, Kilo), and `--platform auto`'s detection of the hosts a workspace uses.

- "flat": `{"version": 1, "hooks": {"<event>": [{<command key>: "...", timeout...}]}}`,
  entries without groups (Cursor's `.cursor/hooks.json`, key `command`, `timeout` in
  seconds; Copilot's `.github/hooks/plugkit.json`, key `bash`, `timeoutSec`). Merged like
  the others: entries whose command is ours are replaced or removed, the rest stay; a file
  left holding nothing is removed.
- "plugin": a JS file plugkit owns whole (OpenCode's and Kilo's plugin directory), marked
  on its first line; --uninstall removes it, and refuses a file without the mark.
"""

import json
import os
import shlex
import shutil

from client.hooks.install_command import is_ours
from client.wire.rpc import ClientError
from plugkit.hosts import HOSTS

# From each row's hooks fact (plugkit/hosts.py): platform -> (command key, timeout key), the
# constant keys of each entry, and where --user writes when not under ~ + the project path.
FLAT = {h.platform: h.hooks.keys for h in HOSTS if h.hooks.fmt == "flat"}
FLAT_EXTRA = {h.platform: h.hooks.extra for h in HOSTS if h.hooks.extra}
PLUGIN_MARK = "// plugkit relay for OpenCode and Kilo"
ASSET = os.path.join(os.path.dirname(__file__), "assets", "opencode_plugin.js")
USER_PATHS = {h.platform: h.hooks.user_path for h in HOSTS if h.hooks.user_path}
# platform -> (workspace entries that show it is configured, programs on PATH that show it is
# installed): the one host table (plugkit.hosts), which the runner's person check reads too.
DETECT = {h.platform: (h.entries, h.programs) for h in HOSTS}


def merge_flat(path: str, old: str, target, platform: str, command: str, uninstall: bool) -> tuple[str, int]:
    key, timeout_key = FLAT[platform]
    try:
        config = json.loads(old) if old.strip() else {}
    except ValueError as exc:
        raise ClientError(f"{path} is not valid JSON ({exc}); fix it first, plugkit will not overwrite it") from None
    if not isinstance(config, dict) or not isinstance(config.get("hooks", {}), dict):
        raise ClientError(f"{path}: expected a JSON object with a \"hooks\" object; plugkit will not overwrite it")
    hooks = config.get("hooks", {})
    removed = 0
    for event in list(hooks):
        entries = hooks[event]
        if not isinstance(entries, list):
            continue
        kept = [e for e in entries if not (isinstance(e, dict) and is_ours(e.get(key)))]
        removed += len(entries) - len(kept)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not uninstall:
        for event, match, timeout in target.events:
            entry = {**FLAT_EXTRA.get(platform, {}), key: f"{command} hook {event} --platform {platform}",
                     timeout_key: timeout}
            if match:
                entry["matcher"] = match
            hooks.setdefault(event, []).append(entry)
    config = {"version": config.get("version", 1), **config, "hooks": hooks}
    if not hooks and set(config) <= {"version", "hooks"}:
        return "", removed  # nothing but ours was there: the file goes
    if old.strip() and config == json.loads(old):
        return old, removed
    return json.dumps(config, indent=2, ensure_ascii=False) + "\n", removed


def merge_plugin(path: str, old: str, target, platform: str, command: str, uninstall: bool) -> tuple[str, int]:
    if old and not old.startswith(PLUGIN_MARK):
        raise ClientError(f"{path} exists and was not written by plugkit; move it away first")
    if uninstall:
        return "", 1 if old else 0
    with open(ASSET, encoding="utf-8") as fh:
        text = fh.read()
    argv = json.dumps(shlex.split(command))
    return text.replace("__PLUGKIT__", argv).replace("__PLATFORM__", platform), 1 if old else 0


MERGERS = {"flat": merge_flat, "plugin": merge_plugin}


def detect(base: str) -> list[str]:
    """The platforms this workspace is configured for, or whose program is on PATH."""
    found = []
    for platform, (entries, programs) in DETECT.items():
        if any(os.path.exists(os.path.join(base, e)) for e in entries) or any(shutil.which(p) for p in programs):
            found.append(platform)
    return found
