"""The hook commands' entry: `plugkit install` writes `<python> -S <this file> hook <Event> --platform P`.

Why not the `plugkit` console script: its interpreter runs `site` first (the venv's .pth files,
pyvenv.cfg, setuptools' distutils shim where installed), ~7 ms of CPU in a ~33 ms hook process,
paid on every tool call of the agent and twice in Qwen Code (its UserPromptSubmit fires after
every tool result). The hook path needs only the standard library and plugkit's own packages
(client/hooks/core.py), so -S skips site and this file puts the directory that holds the
`client` package (the venv's site-packages, or a checkout an editable install points at) first
on sys.path, in place of its own directory (whose module names would shadow the stdlib's).
PYTHONPATH is honoured as it was; the runner an autostart spawns is a fresh interpreter with site.
"""

import os
import sys

if __name__ == "__main__":  # run as the hook command; an import (a tool walking modules) does nothing
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    from client.cli import main

    main()
