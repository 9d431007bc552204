"""What the argparse-based verbs (gate, mutable, prd, evidence, approve, memory) say when they fail.

An agent reads a failure through a small window: one line saying what is wrong and the
command to run next, never argparse's usage block. A runner error that names no next
step gets the family's listing command as one (a table: adding a verb family is a row).
"""

import argparse
import functools
import json
import sys
from typing import Callable

from client.wire.rpc import RpcFailure

# verb family -> the command that shows what the error was about
NEXT = {
    "gate": "plugkit gate status",
    "mutable": "plugkit mutable list",
    "prd": "plugkit prd list",
    "evidence": "plugkit evidence list",
    "approve": "plugkit approve --list",
    "memory": "plugkit memory list",
    "work": "plugkit work status",
}


class BriefParser(argparse.ArgumentParser):
    """argparse, except that a usage error is one line naming `--help` (subparsers inherit it)."""

    def error(self, message: str):  # type: ignore[override]
        hint = f"`{self.prog} --help` shows the usage"
        if "--json" in sys.argv[1:]:
            print(json.dumps({"error": {"message": message, "code": "usage", "next": f"{self.prog} --help"}}))
        self.exit(2, f"{self.prog}: {message}; {hint}\n")


def names_next(family: str) -> Callable[[Callable[[list[str]], int]], Callable[[list[str]], int]]:
    """Decorate a verb's main: a runner error without a `next` gets the family's listing."""

    def wrap(main: Callable[[list[str]], int]) -> Callable[[list[str]], int]:
        @functools.wraps(main)
        def run(argv: list[str]) -> int:
            try:
                return main(argv)
            except RpcFailure as exc:
                if not (isinstance(exc.data, dict) and exc.data.get("next")) and not isinstance(exc.data, list):
                    exc.data = {**(exc.data if isinstance(exc.data, dict) else {}), "next": NEXT[family]}
                raise

        return run

    return wrap
