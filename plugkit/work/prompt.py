"""The prompt a worker starts with: the item, what counts as done, and the rules of its worktree.

Short and bounded: a worker reads it through its own context window, and the item's lists
come from a file anyone can edit. The first line is `work item <id>: <subject>` (the fake
model of the hosts tests routes each conversation on it).
"""

from __future__ import annotations

from typing import Any

MAX_LIST = 12   # acceptance criteria / edge cases shown; the rest are counted
MAX_LINE = 300  # characters per line (subject, criterion, command)


def _cut(text: str) -> str:
    one = " ".join(str(text).split())  # one line: an item's newlines must not fake a section
    return one if len(one) <= MAX_LINE else one[:MAX_LINE - 1] + "…"


def _section(title: str, lines: list[str]) -> list[str]:
    if not lines:
        return []
    shown = [f"- {_cut(x)}" for x in lines[:MAX_LIST]]
    if len(lines) > MAX_LIST:
        shown.append(f"- ... and {len(lines) - MAX_LIST} more in .prd (item above)")
    return ["", f"{title}:", *shown]


MAX_EVICTED = 60  # lines of an eviction's context (conflict hunks, a check's output tail)


def build(item: Any, verify: str | None, branch: str, worktree: str, previous: str | None = None,
          interrupted: str | None = None, evicted: str | None = None, target: str = "the run's branch") -> str:
    """The worker's prompt for `item` (a plugkit.lifecycle.prd.Item). `verify` is the
    command the runner will run once the worker stops (the item's own, else the workspace's);
    `previous`, why the last attempt failed (its first line, then the check's last lines);
    `interrupted`, the recovery note of an attempt the runner's death cut short; `evicted`, why the
    landing queue evicted the last attempt's branch (its first line), then the conflict's hunks or
    the check's output on the rebased tree."""
    verify = getattr(item, "verify", None) or verify
    lines = [f"work item {item.id}: {_cut(item.subject)}"]
    lines += _section("Acceptance criteria", list(item.acceptance))
    lines += _section("Edge cases to handle", list(item.edge_cases))
    lines += ["", "Evidence:"]
    if verify:
        lines.append(f"- when you stop, the runner runs `{_cut(verify)}` in this worktree; the item is "
                     "completed only if it passes and your branch has commits")
    else:
        lines.append("- when you stop, the item is completed only if your branch has commits")
    lines += ["", "Rules:",
              f"- work only inside this worktree ({_cut(worktree)}), on branch {branch}",
              "- commit your work with git before you stop",
              "- do not merge, push or switch branches",
              "- run code with `exec:<lang>` (e.g. exec:python) when plugkit hooks are present"]
    if previous:
        first, *rest = previous.splitlines()
        lines += ["", "The previous attempt failed; start from what it says:", f"- {_cut(first)}"]
        lines += [f"  | {line[:MAX_LINE]}" for line in rest[:MAX_LIST + 1]]
    if interrupted:
        lines += ["", "You were interrupted; continue from where you stopped:"]
        lines += [f"- {_cut(line)}" for line in interrupted.splitlines()[:MAX_LIST]]
    if evicted:
        first, *rest = evicted.splitlines()
        lines += ["", f"Your last branch was evicted from the landing queue: this worktree starts from the new tip "
                      f"of {_cut(target)}, with what landed before it; redo the item on it:", f"- {_cut(first)}"]
        lines += [f"  | {line[:MAX_LINE]}" for line in rest[-MAX_EVICTED:]]
    return "\n".join(lines) + "\n"
