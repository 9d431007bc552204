"""One session's private page: its incognito context, the page's console/error stream into the
running task, JavaScript evaluation, and the rules for talking to pyppeteer safely.

Two pyppeteer 2.0 hazards shape this module:
- Its CDP dispatch resolves response futures without checking whether they were cancelled;
  a cancelled call whose answer (or "target closed") arrives later raises InvalidStateError
  inside the websocket reader and silently kills the connection for every session. So we
  never cancel a pyppeteer call: `settle` runs it as its own task and, when the page is lost
  or a bound passes, abandons it (its eventual error is consumed, not logged).
- Its console handler raises on arguments it cannot convert (console.log(1n)) inside that same
  reader, and an 'error' event (page crash) with no listener raises there too. We replace the
  console and exception handlers on the page's CDP session with our own, which never raise,
  and always listen for 'error'. (`page._client` is the page's CDPSession; pinned to 2.0.x.)
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Awaitable, Optional

from runner.system import logs
from runner.executors.base import SessionKey, TaskIO

log = logs.get("plugkit.browser")

# Console and page errors go to stderr (the page's own diagnostics, like a process's stderr);
# stdout stays for command results and the JSON of the return value. Notes from plugkit go
# to "info", as the manager's own notes do.
CONSOLE_STREAM = "stderr"
NOTE_STREAM = "info"
_CONSOLE_NAMES = {"warning": "warn", "startGroup": "group", "startGroupCollapsed": "group", "endGroup": "groupEnd"}
_PYPPETEER_SCRIPT = "__pyppeteer_evaluation_script__"

# The user's code runs as the body of an async function (so `return` and top-level `await`
# work); the value is serialised in the page, where we can tell undefined from null and
# survive BigInt, DOM nodes and cycles. The prelude is one line and the code is padded with
# newlines so that line numbers in stacks are the script's own line numbers.
# The result travels as one JSON string: a primitive comes back in the same CDP reply, where an
# object result would cost pyppeteer two more round trips (fetch by value, release the handle).
_PRELUDE = "async () => { let __plugkit_v; try { __plugkit_v = await (async () => {"
_EPILOGUE = """
})(); } catch (e) {
  if (e instanceof Error || (e && typeof e.message === "string" && typeof e.stack === "string"))
    return JSON.stringify({error: true, name: String(e.name), message: String(e.message),
                           stack: String(e.stack || "")});
  let shown; try { shown = JSON.stringify(e); } catch (_) {}
  return JSON.stringify({error: true, name: "a thrown value", message: shown === undefined ? String(e) : shown,
                         stack: ""});
}
const v = __plugkit_v;
if (v === undefined) return "{}";
if (typeof v === "bigint") return JSON.stringify({text: v + "n"});
if (typeof Node !== "undefined" && v instanceof Node) return JSON.stringify({text: v.outerHTML ?? String(v.textContent)});
try { const json = JSON.stringify(v); if (json !== undefined) return JSON.stringify({json}); }
catch (e) { return JSON.stringify({text: String(v), note: String(e && e.message)}); }
return JSON.stringify({text: String(v)});
}"""


# Why a page is gone when its browser's DevTools pipe closed under it (Chromium crashed or
# was killed): the task that was running ends as `browser_crashed`, not as a JS error.
BROWSER_CRASHED = "the browser crashed"


class PageGone(Exception):
    """The page went away under an operation (context closed, page or browser crashed)."""

    @property
    def browser_crashed(self) -> bool:
        return str(self) == BROWSER_CRASHED


def _consume(fut: asyncio.Future) -> None:
    if not fut.cancelled():
        fut.exception()


async def settle(pending: Awaitable[Any], gone: Optional[asyncio.Future] = None,
                 timeout: Optional[float] = None) -> Any:
    """Await a pyppeteer call without ever cancelling it (see the module docstring).
    Raises PageGone when `gone` resolves first, asyncio.TimeoutError when `timeout` passes."""
    op = asyncio.ensure_future(pending)
    op.add_done_callback(_consume)
    waiting = {op} if gone is None else {op, gone}
    await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    if op.done():
        return op.result()
    if gone is not None and gone.done():
        raise PageGone(gone.result())
    raise asyncio.TimeoutError()


def wrap(js: str, js_line: int) -> str:
    return _PRELUDE + "\n" * (js_line - 1) + js + _EPILOGUE


class SessionPage:
    """The incognito context and page of one session, on one browser generation."""

    def __init__(self, key: SessionKey, context: Any, page: Any, generation: int) -> None:
        self.key, self.context, self.page, self.generation = key, context, page, generation
        self.gone: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.sink: Optional[TaskIO] = None  # the task whose output receives console lines now
        self.last_used = time.monotonic()
        self._chores: set[asyncio.Future] = set()  # dialog answers in flight (held, never cancelled)
        self._install()

    # --- events -----------------------------------------------------------------

    def _install(self) -> None:
        client = self.page._client
        client.remove_all_listeners("Runtime.consoleAPICalled")
        client.remove_all_listeners("Runtime.exceptionThrown")
        client.on("Runtime.consoleAPICalled", self._on_console)
        client.on("Runtime.exceptionThrown", self._on_exception)
        self.page.on("error", self._on_crash)
        self.page.on("dialog", self._on_dialog)

    def _emit(self, stream: str, text: str) -> None:
        task = self.sink
        if task is not None and not task.finished:
            task.write_text(stream, text if text.endswith("\n") else text + "\n")

    def _on_console(self, event: dict) -> None:
        try:
            kind = _CONSOLE_NAMES.get(event.get("type", "log"), event.get("type", "log"))
            text = " ".join(render_remote(arg) for arg in event.get("args", ()))
            self._emit(CONSOLE_STREAM, f"[console.{kind}] {text}")
        except Exception:  # never raise into pyppeteer's websocket reader
            log.exception("browser_console_event_failed")

    def _on_exception(self, event: dict) -> None:
        try:
            self._emit(CONSOLE_STREAM, f"[pageerror] {self.rename(exception_text(event.get('exceptionDetails', {})))}")
        except Exception:
            log.exception("browser_exception_event_failed")

    def _on_crash(self, *_: Any) -> None:
        self._emit(CONSOLE_STREAM, "[pagecrash] the page's renderer crashed")
        self.lose("the page crashed")

    def _on_dialog(self, dialog: Any) -> None:
        # alert()/confirm()/prompt() block the page until answered: answer "cancel" and say so.
        self._emit(CONSOLE_STREAM, f"[dialog.{dialog.type}] {dialog.message} (dismissed)")
        chore = asyncio.ensure_future(dialog.dismiss())
        self._chores.add(chore)
        chore.add_done_callback(_consume)
        chore.add_done_callback(self._chores.discard)

    def rename(self, text: str) -> str:
        task = self.sink
        return text.replace(_PYPPETEER_SCRIPT, f"task_{task.id}" if task else "task")

    # --- life -------------------------------------------------------------------

    def usable(self, generation: int) -> bool:
        return not self.gone.done() and self.generation == generation

    def lose(self, why: str) -> None:
        if not self.gone.done():
            self.gone.set_result(why)

    async def close(self, why: str, timeout: float) -> bool:
        """Dispose the context (its pages and renderers die with it). False if the browser
        did not answer in time, which only a browser restart can fix."""
        self.lose(why)
        try:
            await settle(self.context.close(), timeout=timeout)
        except asyncio.TimeoutError:
            return False
        except Exception:  # already gone with its browser: nothing left to close
            pass
        return True

    async def run(self, pending: Awaitable[Any]) -> Any:
        self.last_used = time.monotonic()
        return await settle(pending, self.gone)

    async def evaluate(self, js: str, js_line: int) -> dict:
        return json.loads(await self.run(self.page.evaluate(wrap(js, js_line))))


def render_remote(obj: dict) -> str:
    """A CDP RemoteObject as console.log shows it: strings bare, objects by their preview."""
    if "unserializableValue" in obj:
        return str(obj["unserializableValue"])
    if obj.get("type") == "undefined":
        return "undefined"
    if "value" in obj:
        value = obj["value"]
        return value if isinstance(value, str) else json.dumps(value)
    preview = obj.get("preview")
    if preview and preview.get("properties") is not None:
        array = preview.get("subtype") == "array"
        items = [_preview_value(p) if array else f"{p.get('name')}: {_preview_value(p)}"
                 for p in preview["properties"]]
        if preview.get("overflow"):
            items.append("…")
        body = ", ".join(items)
        return f"[{body}]" if array else (f"{{{body}}}" if preview.get("description") == "Object"
                                         else f"{preview.get('description')} {{{body}}}")
    return str(obj.get("description", obj.get("type", "?")))


def _preview_value(prop: dict) -> str:
    value = prop.get("value", "")
    return json.dumps(value) if prop.get("type") == "string" else str(value)


def exception_text(details: dict) -> str:
    """Uncaught exception details: an Error's description already carries its stack; without
    one, the text plus the CDP stack frames (0-based there, 1-based like Error.stack here)."""
    exc = details.get("exception") or {}
    if exc.get("description"):
        return exc["description"]
    head = details.get("text") or "Uncaught exception"
    if "value" in exc:
        head = f"{head} {json.dumps(exc['value'])}"
    frames = (details.get("stackTrace") or {}).get("callFrames") or []
    lines = [f"    at {f.get('functionName') or '<anonymous>'} ({f.get('url') or '<anonymous>'}:"
             f"{f.get('lineNumber', -1) + 1}:{f.get('columnNumber', -1) + 1})" for f in frames]
    return "\n".join([head, *lines])
