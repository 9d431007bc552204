"""Every write tool of every pinned host that the host offers its model headless, as a row:
(host, tool) -> the call that changes the committed file `a.py` (or, for a tool that only
creates, writes the new file `new.py`), in that host's own spelling of the tool's arguments.

Write tools in plugkit/host_tools.py with no row here, and why (the host does not offer them
to a model in the configuration tests/hosts can drive):
- claude-code MultiEdit: not registered by 2.1.197 (kept in the table for older versions).
- qwen replace: the legacy name of `edit`; qwen 0.15 offers `edit` only.
- opencode/kilo multiedit, patch: older versions' tools; kilo notebook_edit edits a live VS Code
  notebook (offered in the editor only). Their apply_patch is offered to `gpt-` models only:
  those rows run with such a model name (MODEL).
- cursor: no installable CLI.
"""

import json

from tests.hosts.script import Call

COMMITTED = "x = 1\n"
NOTEBOOK = json.dumps({"cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "source": ["x = 1\n"],
                                  "outputs": [], "execution_count": None}],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"
FILES = {"a.py": COMMITTED, "nb.ipynb": NOTEBOOK}


def _patch(path: str) -> str:
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n-x = 1\n+x = 2\n*** End Patch\n"


# (host, tool) -> (work dir -> the call, the file it must leave as it was, or None when the
# tool only creates: then the file must not exist afterwards)
WRITES = {
    ("claude", "Write"): (lambda w: Call("Write", {"file_path": f"{w}/a.py", "content": "x = 2\n"}), "a.py"),
    ("claude", "Edit"): (lambda w: Call("Edit", {"file_path": f"{w}/a.py", "old_string": "x = 1",
                                                 "new_string": "x = 2"}), "a.py"),
    ("claude", "NotebookEdit"): (lambda w: Call("NotebookEdit", {"notebook_path": f"{w}/nb.ipynb", "cell_id": "c1",
                                                                 "new_source": "x = 2\n"}), "nb.ipynb"),
    ("qwen", "write_file"): (lambda w: Call("write_file", {"file_path": f"{w}/a.py", "content": "x = 2\n"}), "a.py"),
    ("qwen", "edit"): (lambda w: Call("edit", {"file_path": f"{w}/a.py", "old_string": "x = 1",
                                               "new_string": "x = 2"}), "a.py"),
    ("gemini", "write_file"): (lambda w: Call("write_file", {"file_path": f"{w}/a.py", "content": "x = 2\n"}), "a.py"),
    ("gemini", "replace"): (lambda w: Call("replace", {"file_path": f"{w}/a.py", "old_string": "x = 1",
                                                       "new_string": "x = 2", "instruction": "set x to 2"}), "a.py"),
    ("codex", "apply_patch"): (lambda w: Call("apply_patch", {"input": _patch(f"{w}/a.py")}, freeform=True), "a.py"),
    ("copilot", "create"): (lambda w: Call("create", {"path": f"{w}/new.py", "file_text": "x = 2\n"}), None),
    ("copilot", "edit"): (lambda w: Call("edit", {"path": f"{w}/a.py", "old_str": "x = 1", "new_str": "x = 2"}),
                          "a.py"),
    ("opencode", "write"): (lambda w: Call("write", {"filePath": f"{w}/a.py", "content": "x = 2\n"}), "a.py"),
    ("opencode", "edit"): (lambda w: Call("edit", {"filePath": f"{w}/a.py", "oldString": "x = 1",
                                                   "newString": "x = 2"}), "a.py"),
    ("kilo", "write"): (lambda w: Call("write", {"filePath": f"{w}/a.py", "content": "x = 2\n"}), "a.py"),
    ("kilo", "edit"): (lambda w: Call("edit", {"filePath": f"{w}/a.py", "oldString": "x = 1",
                                               "newString": "x = 2"}), "a.py"),
    ("opencode", "apply_patch"): (lambda w: Call("apply_patch", {"patchText": _patch(f"{w}/a.py")}), "a.py"),
    ("kilo", "apply_patch"): (lambda w: Call("apply_patch", {"patchText": _patch(f"{w}/a.py")}), "a.py"),
}
# (host, tool) -> the model name the host must be given for it to offer the tool
MODEL = {("opencode", "apply_patch"): "gpt-5-fake", ("kilo", "apply_patch"): "gpt-5-fake"}
# host -> a read of the file first: the edit tools of these hosts refuse a file the model has not
# read ("File ... has not been read"), which would leave it unchanged with or without plugkit.
READS = {
    "claude": lambda path: Call("Read", {"file_path": path}),
    "qwen": lambda path: Call("read_file", {"file_path": path}),
    "gemini": lambda path: Call("read_file", {"file_path": path}),
    "copilot": lambda path: Call("view", {"path": path}),
    "opencode": lambda path: Call("read", {"filePath": path}),
    "kilo": lambda path: Call("read", {"filePath": path}),
}
# tests/hosts' host names -> plugkit's platform names, where they differ
PLATFORM = {"claude": "claude-code"}
