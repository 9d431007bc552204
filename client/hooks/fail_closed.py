"""The hook's answer when no runner answers in a workspace that enforces its gates.

Imported by client/hooks/core.py on its failure path only: a plain tool call never loads it.
"""

from client.hooks.events import Answer, Event


def enforced_answer(kind: str, why: str, event: Event) -> Answer | None:
    """Under gates = "enforce" (plugkit/enforce_pins.py: pinned by the runner, or configured),
    whoever stops or wedges the runner must not switch the gates off: a file-writing tool is
    denied and a Stop turned back (once: never while stop_hook_active). Shell calls stay
    allowed, or nobody could run the restart; elsewhere the host is never blocked by plugkit."""
    if kind == "pre_tool":
        from plugkit.lifecycle.hook_policy import WRITE_TOOLS  # the gates' own list: the same writes

        if event.tool_name not in WRITE_TOOLS:
            return None
    elif kind != "stop" or event.stop_hook_active:
        return None
    from plugkit.enforce_pins import enforcing

    try:
        root = enforcing(event.cwd)
    except (OSError, ValueError):
        return None
    if root is None:
        return None
    line = (f"plugkit gates are enforced in {root} and no runner answers ({why}); run "
            f"`plugkit runner restart`, then retry")
    return Answer("deny", line) if kind == "pre_tool" else Answer(block=True, reason=line)


def unread_answer(why: str, cwd: str, worker: bool = False) -> Answer | None:
    """A tool call whose event the hook could not read (too big, not JSON), or the runner could
    not take: which tool it is, and what it does, are unchecked. Under enforced gates at `cwd`
    (the host runs its hooks in the project), or from a `plugkit work` worker, it is denied:
    padding a file or a command past a cap must not walk around the gates or the worker policy."""
    if worker:
        return Answer("deny", f"plugkit work: this tool call could not be checked ({why}); "
                              "make it smaller (a long command: a script file it runs)")
    from plugkit.enforce_pins import enforcing

    try:
        root = enforcing(cwd)
    except (OSError, ValueError):
        return None
    if root is None:
        return None
    return Answer("deny", f"plugkit gates are enforced in {root} and this tool call could not be checked "
                          f"({why}); write the file in smaller pieces")
