"""What the argparse-based verbs (gate, mutable, prd, evidence, approve, memory) say when they fail.

An agent reads a failure through a small window: one line saying what is wrong and the
command to run next, never argparse's usage block. A runner error that names no next
step gets the family's listing command as one (a table: adding a verb family is a row).
"""

import argparse
import functools
import json
import re
import sys
from typing import Callable

from client.args import suggest
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


_CHOICE = re.compile(r"argument (?P<arg>[^:]+): invalid choice: '(?P<word>.*)' \(choose from (?P<choices>.*)\)$")
_UNKNOWN = re.compile(r"unrecognized arguments: (?P<words>.*)$")


class BriefParser(argparse.ArgumentParser):
    """argparse, except that a usage error is one line naming `--help` (subparsers inherit it),
    in words a person uses: "unknown gate verb 'advanc'; did you mean advance?", never argparse's
    "argument action: invalid choice" or a usage dump. `words`: what else may stand first (the
    verb's own subcommands that are dispatched before argparse, such as `work status`)."""

    def __init__(self, *args, words: tuple[str, ...] = (), **kwargs) -> None:
        self.words = words
        self.options: set[str] = set()  # before argparse's own __init__, which adds -h
        self.children: list[BriefParser] = []
        super().__init__(*args, **kwargs)

    def add_argument(self, *args, **kwargs):  # type: ignore[override]
        self.options.update(a for a in args if isinstance(a, str) and a.startswith("-"))
        return super().add_argument(*args, **kwargs)

    def add_subparsers(self, **kwargs):  # type: ignore[override]
        action = super().add_subparsers(**kwargs)
        parent = self

        def add_parser(name: str, *a, _add=action.add_parser, **kw):
            child = _add(name, *a, **kw)
            child.options |= {o for p in kw.get("parents", ()) for o in getattr(p, "options", ())}
            parent.children.append(child)
            return child

        action.add_parser = add_parser  # type: ignore[method-assign]
        return action

    def _all_options(self) -> set[str]:
        found = set(self.options)
        for child in self.children:
            found |= child._all_options()
        return found

    def plain(self, message: str) -> str:
        """argparse's message, said plainly, with a suggestion where one word is close."""
        m = _CHOICE.match(message)
        if m:
            choices = [c.strip().strip("'") for c in m["choices"].split(",")]
            listed = ", ".join(choices)
            if m["arg"] == "action":  # the subcommand
                return f"unknown {self.prog.removeprefix('plugkit ')} verb {m['word']!r}{suggest(m['word'], choices)} " \
                       f"(one of: {listed})"
            return f"{m['arg']}: {m['word']!r} is not one of {listed}{suggest(m['word'], choices)}"
        m = _UNKNOWN.match(message)
        if m:
            word = m["words"].split()[0]
            if word.startswith("-"):
                return f"unknown option {word}{suggest(word.split('=')[0], sorted(self._all_options()))}"
            known = [*self.words, *(c.prog.rsplit(' ', 1)[-1] for c in self.children)]
            return f"unexpected {word!r}{suggest(word, known)}"
        return message

    def error(self, message: str):  # type: ignore[override]
        said = self.plain(message)
        hint = f"`{self.prog} --help` shows the usage"
        if "--json" in sys.argv[1:]:
            print(json.dumps({"error": {"message": said, "code": "usage", "next": f"{self.prog} --help"}}))
        self.exit(2, f"{self.prog}: {said}; {hint}\n")


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
