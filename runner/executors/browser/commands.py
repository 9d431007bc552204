"""The browser script: line commands before the JavaScript, as a table of name -> (parse, run).

A script is zero or more command lines, then JavaScript to the end. A line is a command when
its first word is a name in COMMANDS (followed by whitespace or the end of the line, and not
by `=` or `(`, which would make it JavaScript: `type = 1`, `close()`). Blank lines between
commands are skipped. The first other line starts the JavaScript; a line that looks like a
mistyped command (`screenshoot out.png`: a bare word that is no JavaScript keyword, then a
word) is refused instead of being handed to the page as a syntax error.

Parsing runs in prepare(), before the task exists, so a bad script starts nothing.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Optional

from plugkit.browser_help import COMMANDS as SUMMARY
from plugkit.browser_help import SCREENSHOT_DIR, WAIT_DEFAULT_MS, commands_text

NAV_TIMEOUT_MS = 30_000
MAX_VIEWPORT = 10_000

_LINE = re.compile(r"^([a-z]+)(?:[ \t]+(.*?))?[ \t]*$")
# Words that can start a JavaScript statement followed by a space and another word.
_JS_WORDS = frozenset(
    "async await break case catch class const continue debugger default delete do else export "
    "for function if import let new return switch throw try typeof var void while with yield".split())
# `x in y` / `x instanceof Y` / `x of y` are JavaScript even though they start with a bare word.
_JS_INFIX = re.compile(r"^(in|instanceof|of)\b")


class ScriptError(ValueError):
    """A script we refuse before running it (message written for the agent)."""


class CommandFailed(Exception):
    """A command that ran and failed (navigation error, no such element, ...)."""


@dataclass(frozen=True)
class Step:
    line: int  # 1-based line in the script
    name: str
    args: Any


@dataclass(frozen=True)
class Script:
    steps: tuple[Step, ...]
    js: str       # "" when the script is only commands
    js_line: int  # 1-based line where the JavaScript starts


class Env:
    """What a command may touch: the session's page, its cwd, and a way to close the page."""

    def __init__(self, page: Any, cwd: str, task_id: int, close_page: Callable[[], Awaitable[None]]) -> None:
        self.page, self.cwd, self.task_id, self.close_page = page, cwd, task_id, close_page


@dataclass(frozen=True)
class Command:
    usage: str
    summary: str
    parse: Callable[[str, str], Any]             # (rest of the line, cwd) -> args; raises ScriptError
    run: Callable[[Env, Any], Awaitable[str]]    # -> the line printed on stdout
    # Guarded commands fail fast when the page goes away under them; `close` makes it go away.
    guarded: bool = True


# --- parsers -----------------------------------------------------------------

def _no_args(name: str) -> Callable[[str, str], None]:
    def parse(rest: str, cwd: str) -> None:
        if rest:
            raise ScriptError(f"{name} takes no arguments (got {rest!r})")
    return parse


def _parse_url(rest: str, cwd: str) -> str:
    if not rest or any(c.isspace() for c in rest):
        raise ScriptError("goto takes one URL: goto http://127.0.0.1:8000/")
    # `goto localhost:3000` is what people type; a bare host:port means http.
    if not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", rest) or re.match(r"^[\w.-]+:\d+(/|$)", rest):
        rest = "http://" + rest
    return rest


def _parse_selector(rest: str, cwd: str) -> str:
    if not rest:
        raise ScriptError("a CSS selector is required")
    return rest


def _parse_wait(rest: str, cwd: str) -> tuple[str, int]:
    head, _, last = rest.rpartition(" ")
    if head.strip() and last.isdigit():
        return head.strip(), int(last)
    return _parse_selector(rest, cwd), WAIT_DEFAULT_MS


def _parse_type(rest: str, cwd: str) -> tuple[str, str]:
    # The selector is the first word, or a quoted string when it needs spaces; the text is
    # everything after it, spaces kept.
    quoted = re.match(r"""^(["'])(.+?)\1(?:[ \t](.*))?$""", rest)
    if quoted:
        selector, text = quoted.group(2), quoted.group(3)
    else:
        selector, _, text = rest.partition(" ")
    if not selector or not text:
        raise ScriptError("type takes a selector and the text: type #search hello world")
    return selector, text


def _parse_viewport(rest: str, cwd: str) -> tuple[int, int]:
    parts = rest.replace("x", " ").split()
    if len(parts) != 2 or not all(p.isdigit() and 0 < int(p) <= MAX_VIEWPORT for p in parts):
        raise ScriptError(f"viewport takes a width and a height in pixels (1..{MAX_VIEWPORT}): viewport 1280 720")
    return int(parts[0]), int(parts[1])


def _parse_screenshot(rest: str, cwd: str) -> Optional[str]:
    return inside_cwd(cwd, rest) if rest else None


def inside_cwd(cwd: str, path: str) -> str:
    """`path` (relative to cwd, or absolute) resolved with symlinks; refused unless inside cwd.
    Screenshots land in the workspace or its evidence dir, never elsewhere on the disk."""
    root = os.path.realpath(cwd)
    target = os.path.realpath(os.path.join(root, os.path.expanduser(path)))
    if target == root or os.path.commonpath([root, target]) != root:
        raise ScriptError(f"screenshot path {path!r} is outside the session's directory {root}; "
                          f"use a path inside it, e.g. {os.path.join(SCREENSHOT_DIR, 'page.png')}")
    return target


# --- handlers ------------------------------------------------------------------

async def _goto(env: Env, url: str) -> str:
    response = await _navigation(env.page.goto(url, waitUntil="load", timeout=NAV_TIMEOUT_MS), "goto")
    return f"goto {_status(response)} {env.page.url}"


async def _reload(env: Env, _: None) -> str:
    response = await _navigation(env.page.reload(waitUntil="load", timeout=NAV_TIMEOUT_MS), "reload")
    return f"reload {_status(response)} {env.page.url}"


async def _navigation(pending: Awaitable[Any], name: str) -> Any:
    from pyppeteer import errors as perr

    try:
        return await pending
    except (perr.PageError, perr.TimeoutError, perr.NetworkError) as exc:
        raise CommandFailed(f"{name}: {exc}") from None


def _status(response: Any) -> str:
    # No response: a same-document navigation (#anchor), about:blank or a data: URL.
    return str(response.status) if response is not None else "-"


async def _screenshot(env: Env, path: Optional[str]) -> str:
    target = path or inside_cwd(env.cwd, os.path.join(SCREENSHOT_DIR, f"task_{env.task_id}.png"))
    png = await env.page.screenshot(type="png")
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        # O_NOFOLLOW: a symlink planted at the final name after the check cannot redirect the write.
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(png)
    except OSError as exc:
        raise CommandFailed(f"screenshot: cannot write {target}: {exc.strerror or exc}") from None
    return f"screenshot {target}"


async def _viewport(env: Env, size: tuple[int, int]) -> str:
    await env.page.setViewport({"width": size[0], "height": size[1]})
    return f"viewport {size[0]}x{size[1]}"


async def _wait(env: Env, args: tuple[str, int]) -> str:
    from pyppeteer import errors as perr

    selector, ms = args
    try:
        await env.page.waitForSelector(selector, timeout=ms)
    except perr.TimeoutError:
        raise CommandFailed(f"wait: nothing matched {selector!r} within {ms} ms") from None
    except (perr.PageError, perr.NetworkError, perr.ElementHandleError) as exc:
        raise CommandFailed(f"wait {selector!r}: {_first_line(exc)}") from None
    return f"wait {selector}: found"


async def _click(env: Env, selector: str) -> str:
    await _on_element(env.page.click(selector), "click", selector)
    return f"click {selector}"


async def _type(env: Env, args: tuple[str, str]) -> str:
    selector, text = args
    await _on_element(env.page.type(selector, text), "type", selector)
    return f"type {selector}: {len(text)} characters"


async def _on_element(pending: Awaitable[Any], name: str, selector: str) -> None:
    from pyppeteer import errors as perr

    try:
        await pending
    except (perr.PageError, perr.NetworkError, perr.ElementHandleError) as exc:
        raise CommandFailed(f"{name} {selector!r}: {_first_line(exc)}") from None


async def _close(env: Env, _: None) -> str:
    await env.close_page()
    return "close: the session's page is closed; the next browser task opens a fresh one"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [exc.__class__.__name__])[0]


COMMANDS: dict[str, Command] = {
    name: Command(*SUMMARY[name], parse, run, **extra) for name, parse, run, extra in (
        ("goto", _parse_url, _goto, {}),
        ("reload", _no_args("reload"), _reload, {}),
        ("screenshot", _parse_screenshot, _screenshot, {}),
        ("viewport", _parse_viewport, _viewport, {}),
        ("wait", _parse_wait, _wait, {}),
        ("click", _parse_selector, _click, {}),
        ("type", _parse_type, _type, {}),
        ("close", _no_args("close"), _close, {"guarded": False}),
    )
}


def parse(code: str, cwd: str) -> Script:
    lines = code.split("\n")
    steps: list[Step] = []
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        match = _LINE.match(line)
        name, rest = (match.group(1), match.group(2) or "") if match else ("", "")
        if name in COMMANDS and not rest.startswith(("=", "(")):
            if steps and steps[-1].name == "close":
                raise ScriptError(f"line {index + 1}: nothing may follow `close` (it closes the page)")
            try:
                steps.append(Step(index + 1, name, COMMANDS[name].parse(rest, cwd)))
            except ScriptError as exc:
                raise ScriptError(f"line {index + 1}: {exc}") from None
            continue
        if name and rest and name not in _JS_WORDS and not _JS_INFIX.match(rest) and re.match(r"[\w\"'#:/]", rest):
            raise ScriptError(f"line {index + 1}: unknown browser command {name!r}; commands: "
                              f"{', '.join(COMMANDS)} (JavaScript starts at the first line that is not one)")
        js = "\n".join(lines[index:])
        if steps and steps[-1].name == "close":
            raise ScriptError(f"line {index + 1}: nothing may follow `close` (it closes the page)")
        return Script(tuple(steps), js, index + 1)
    return Script(tuple(steps), "", len(lines) + 1)


def help_text() -> str:
    """The command table as `plugkit exec:browser --help` prints it."""
    return commands_text()
