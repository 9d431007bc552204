"""Which program runs for a caller: the caller's environment (sent with task.exec) decides.

A task runs in the caller's environment, so its program is found on the caller's PATH, and
`{python}` (the python row's program) is the caller's Python: an activated venv's, not
plugkit's own (whose pytest and plugins a project's tests must never run under). In order:
an explicit $PLUGKIT_PYTHON (the caller's, else the runner's), $VIRTUAL_ENV/bin/python,
python3 then python on the caller's PATH, and last the runner's own interpreter, so
`exec:python` still works on a machine with no Python on PATH. Without a caller environment
(a runner-internal task, an old client) the runner's PLUGKIT_PYTHON or its own, as before.

Standard library only.
"""

from __future__ import annotations

import os
import sys
from typing import Mapping

OWN = "the runner's own"


def python_choices(python: str | None, environ: Mapping[str, str] | None) -> list[tuple[str, str]]:
    """(program, where it comes from) for `{python}`, in the order tried. `python` is the
    runner's configured PLUGKIT_PYTHON. An explicit choice is the only one: a PLUGKIT_PYTHON
    that names nothing is an error, not a silent fallback."""
    explicit = (environ or {}).get("PLUGKIT_PYTHON") or python
    if explicit:
        return [(explicit, "PLUGKIT_PYTHON")]
    if environ is None:
        return [(sys.executable, OWN)]
    choices = []
    venv = environ.get("VIRTUAL_ENV")
    if venv and os.path.isabs(venv):
        choices.append((os.path.join(venv, "bin", "python"), "$VIRTUAL_ENV"))
    choices += [("python3", "PATH"), ("python", "PATH"), (sys.executable, OWN)]
    return choices


def base_path(environ: Mapping[str, str] | None) -> str:
    """The PATH programs are looked up on: the caller's, else this process's."""
    return (os.environ if environ is None else environ).get("PATH", os.defpath)
