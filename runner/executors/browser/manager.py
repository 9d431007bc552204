"""BrowserManager: the one Chromium of a runner and the session pages in it.

Launches on first use, relaunches once when a task finds it dead (and says so in that task's
output), hands each session its own incognito context + page, serialises a session's tasks on
its page, closes pages of idle sessions and the browser once it has had no pages for idle_s.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Mapping, Optional

from runner.system import logs
from runner.executors.base import SessionKey
from plugkit.chromium import Sandbox, sandbox_for
from runner.system.chromium import (LAUNCH_TIMEOUT_S, ChromiumProcess, ChromiumSpec, LaunchError, find_executable,
                                    remove_stale_profiles)
from runner.executors.browser.session import BROWSER_CRASHED, SessionPage, settle

log = logs.get("plugkit.browser")

# A context close or page open the browser does not answer within this is a hung browser.
CLOSE_TIMEOUT_S = 5.0
OPEN_TIMEOUT_S = 15.0
DEFAULT_VIEWPORT = {"width": 800, "height": 600}

Note = Callable[[str], None]  # writes one plugkit note into the output of the task being served


@dataclass(frozen=True)
class BrowserSpec:
    chromium: ChromiumSpec
    environ: Mapping[str, str]  # PLUGKIT_CHROMIUM and PATH, read at boot; found again at each launch
    idle_s: float          # close the browser after this long with no pages
    session_idle_s: float  # close a session's page unused this long (the manager's session expiry)


class BrowserManager:
    def __init__(self, spec: BrowserSpec) -> None:
        self.spec = spec
        self._chromium: Optional[ChromiumProcess] = None
        self._browser: Any = None
        self._generation = 0
        self._launch_lock = asyncio.Lock()
        self._pages: dict[SessionKey, SessionPage] = {}
        self._lost: dict[SessionKey, str] = {}   # sessions whose page died with a browser
        self._queues: dict[SessionKey, asyncio.Lock] = {}  # one task at a time per page
        self._relaunch_note: Optional[str] = None
        self._busy = 0
        self._last_activity = time.monotonic()
        self._idle_task: Optional[asyncio.Task] = None
        self._profiles_swept = False
        self.sandbox: Optional[Sandbox] = None  # decided (probed) at the first launch, then kept
        self._executable: Optional[str] = None   # the Chromium last found
        self.launches = self.crashes = 0

    def check_installed(self) -> None:
        """Raises LaunchError when no browser runs and the binary is missing."""
        if self._chromium is None:
            find_executable(self.spec.environ)

    @contextlib.asynccontextmanager
    async def turn(self, key: SessionKey) -> AsyncIterator[None]:
        """The session's turn on its page: tasks of one session run one after another."""
        self._busy += 1
        try:
            async with self._queues.setdefault(key, asyncio.Lock()):
                yield
        finally:
            self._busy -= 1
            self._last_activity = time.monotonic()

    async def page_for(self, key: SessionKey, note: Note) -> SessionPage:
        browser = await self._ensure_browser(note)
        page = self._pages.get(key)
        if page is not None and page.usable(self._generation):
            return page
        why = self._lost.pop(key, None)
        if page is not None:  # crashed while its browser lived on: discard what is left of it
            why = page.gone.result() if page.gone.done() else "it stopped answering"
            await self.drop_page(key, why)
        if why:
            note(f"[plugkit] this session's page was lost ({why}); opened a fresh one")
        context = await settle(browser.createIncognitoBrowserContext(), timeout=OPEN_TIMEOUT_S)
        try:
            raw = await settle(context.newPage(), timeout=OPEN_TIMEOUT_S)
        except BaseException:
            await settle(context.close(), timeout=CLOSE_TIMEOUT_S)
            raise
        page = self._pages[key] = SessionPage(key, context, raw, self._generation)
        return page

    async def drop_page(self, key: SessionKey, why: str) -> None:
        """Close a session's context (its page and renderer die with it)."""
        page = self._pages.pop(key, None)
        if page is None:
            return
        self._last_activity = time.monotonic()
        if page.generation != self._generation or self._browser is None:
            page.lose(why)  # it went with its browser
            return
        if not await page.close(why, CLOSE_TIMEOUT_S):
            log.warning("browser_unresponsive", session_id=key.session_id)
            async with self._launch_lock:
                self._relaunch_note = "Chromium stopped answering and was stopped"
                await self._stop_browser()

    async def end_session(self, key: SessionKey) -> None:
        self._lost.pop(key, None)
        self._queues.pop(key, None)
        await self.drop_page(key, "its session ended")

    async def close(self) -> None:
        if self._idle_task is not None:
            self._idle_task.cancel()
            await asyncio.gather(self._idle_task, return_exceptions=True)
        async with self._launch_lock:
            for page in self._pages.values():
                page.lose("the runner is shutting down")
            self._pages.clear()
            await self._stop_browser()  # the contexts die with the browser; no need to close each

    def snapshot(self) -> dict:
        now = time.monotonic()
        running = self._chromium is not None and self._chromium.alive()
        return {
            "chromium": self._executable or self._executable_text(), "running": running,
            "sandbox": self.sandbox.as_dict() if self.sandbox else None,
            "pid": self._chromium.pid if running else None, "launches": self.launches,
            "crashes": self.crashes, "idle_close_s": self.spec.idle_s,
            "pages": [{"session_id": k.session_id, "root": k.root, "url": pg.page.url,
                       "busy": pg.sink is not None, "idle_s": round(now - pg.last_used, 1)}
                      for k, pg in self._pages.items()],
        }

    # --- the browser ----------------------------------------------------------------

    async def _ensure_browser(self, note: Note) -> Any:
        async with self._launch_lock:
            if self._chromium is not None and self._healthy():
                return self._browser
            if self._chromium is not None:  # it died under us (the exit callback may not have run yet)
                if not self._chromium.alive():
                    await self._chromium.settle_exit()
                self._on_chromium_exit(self._chromium)
                await self._stop_browser()
            # Exactly one launch per task: if it fails, this task fails and says why.
            why, self._relaunch_note = self._relaunch_note, None
            if why:
                note(f"[plugkit] {why}; relaunching it")
            await self._launch()
            if why:
                note(f"[plugkit] Chromium relaunched (pid {self._chromium.pid})")
            return self._browser

    def _healthy(self) -> bool:
        # pyppeteer's DevTools reader can die by itself (an exception in a handler) while
        # Chromium lives: without it nothing answers, so count that as a dead browser too.
        reader = getattr(getattr(self._browser, "_connection", None), "_recv_fut", None)
        return self._chromium.alive() and (reader is None or not reader.done())

    async def _launch(self) -> None:
        executable = self._executable = find_executable(self.spec.environ)
        if not self._profiles_swept:
            await asyncio.to_thread(remove_stale_profiles, self.spec.chromium.home)
            self._profiles_swept = True
        # pyppeteer takes ~100 ms to import: do it in a thread while Chromium starts.
        importing = asyncio.ensure_future(asyncio.to_thread(_import_cdp))
        importing.add_done_callback(_consume)
        sandbox = await self.sandbox_verdict(executable)
        chromium = await ChromiumProcess.spawn(self.spec.chromium, executable, sandbox, self._on_chromium_exit)
        try:
            cdp = await importing
            browser = await settle(cdp.connect(chromium.cdp, DEFAULT_VIEWPORT), timeout=LAUNCH_TIMEOUT_S)
        except BaseException as exc:
            if not chromium.alive():
                await chromium.settle_exit()
            exited = chromium.pipes.exited
            await asyncio.shield(chromium.stop())
            if isinstance(exc, (LaunchError, asyncio.CancelledError, KeyboardInterrupt)):
                raise
            if exited:
                words = chromium.last_words()
                # A kernel that passed our probe but failed Chromium's sandbox (its own FATAL line
                # says "sandbox"): name what we started it with, and where to look.
                hint = (f"; it was started sandboxed ({sandbox.why}), see `plugkit doctor`"
                        if sandbox.on and "sandbox" in words.lower() else "")
                raise LaunchError(f"Chromium ({executable}) {chromium.exit_text()} during start-up: "
                                  f"{words}{hint}") from None
            raise LaunchError(f"Chromium ({executable}) did not answer on its DevTools pipe: "
                              f"{exc or 'timed out'}; {chromium.last_words()}") from None
        browser.on("disconnected", lambda: self._on_disconnected(chromium))
        self._chromium, self._browser = chromium, browser
        self._generation += 1
        self.launches += 1
        self._last_activity = time.monotonic()
        log.info("browser_launched", pid=chromium.pid, generation=self._generation, sandbox=self.sandbox.on)
        if self._idle_task is None or self._idle_task.done():
            self._idle_task = asyncio.create_task(self._idle_loop(), name="browser-idle")

    async def sandbox_verdict(self, executable: str) -> Sandbox:
        """Whether Chromium runs sandboxed here: probed once per runner (a child, ~20 ms)."""
        if self.sandbox is None:
            self.sandbox = await asyncio.to_thread(sandbox_for, executable)
            log.info("browser_sandbox", on=self.sandbox.on, why=self.sandbox.why)
        return self.sandbox

    async def status(self) -> dict:
        """For runner.info: the browser and its sandbox, decided now if no launch did yet."""
        running = self._chromium is not None and self._chromium.alive()
        if self._executable is None:  # found once here (runner.info is benchmarked); each launch looks again
            try:
                self._executable = find_executable(self.spec.environ)
            except LaunchError as exc:
                return {"running": running, "chromium": None, "problem": str(exc), "sandbox": None}
        sandbox = await self.sandbox_verdict(self._executable)
        return {"running": running, "pid": self._chromium.pid if running else None,
                "chromium": self._executable, "sandbox": sandbox.as_dict()}

    def _executable_text(self) -> str:
        try:
            return find_executable(self.spec.environ)
        except LaunchError as exc:
            return str(exc)

    def _on_disconnected(self, proc: ChromiumProcess) -> None:
        """The DevTools pipe closed without our asking: Chromium is dying. pyppeteer is about to
        fail every call in flight with "Target closed"; mark the pages first so the tasks
        running on them end as a browser crash. The exit (and the relaunch note) follows."""
        if proc.stopping or proc is not self._chromium:
            return
        for page in self._pages.values():
            page.lose(BROWSER_CRASHED)

    async def crash_text(self) -> str:
        """How the current Chromium ended, once its exit is collected (a moment after EOF)."""
        proc = self._chromium
        if proc is None:
            return "Chromium is gone"
        if not proc.pipes.exited:
            await proc.settle_exit()
        return f"Chromium {proc.exit_text()}"

    def _on_chromium_exit(self, proc: ChromiumProcess) -> None:
        if proc.stopping or proc is not self._chromium:
            return
        proc.stopping = True  # counted once, whether the callback or a task noticed first
        self.crashes += 1
        why = self._relaunch_note = f"Chromium {proc.exit_text()}"
        log.warning("browser_exited", pid=proc.pid, how=why, stderr_tail=proc.last_words())
        for key, page in self._pages.items():
            page.lose(BROWSER_CRASHED)  # a task running on it ends as browser_crashed
            self._lost[key] = why       # the session's next task is told how
        self._pages.clear()

    async def _stop_browser(self) -> None:
        chromium, browser = self._chromium, self._browser
        self._chromium = self._browser = None
        if chromium is None:
            return
        alive = chromium.alive()
        chromium.stopping = True
        if browser is not None:
            try:
                if alive:  # a clean exit reaps its own helpers: much faster than TERM, grace, KILL
                    await settle(browser.close(), timeout=1.0)
                await settle(browser.disconnect(), timeout=1.0)
            except Exception:  # a dead socket: nothing to say goodbye to
                pass
        await chromium.stop(exit_wait_s=2.0 if alive else 0.0)
        log.info("browser_stopped", pid=chromium.pid)

    async def _idle_loop(self) -> None:
        """Close pages of sessions idle past the session limit (their session expired without an
        end_session), and the browser once it has had no pages for idle_s."""
        spec = self.spec
        interval = min(5.0, max(0.05, min(spec.idle_s, spec.session_idle_s) / 4))
        while self._browser is not None:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for key, page in list(self._pages.items()):
                queue = self._queues.get(key)
                if now - page.last_used >= spec.session_idle_s and not (queue and queue.locked()):
                    self._queues.pop(key, None)
                    await self.drop_page(key, "its session was idle")
            if self._pages or self._busy or now - self._last_activity < spec.idle_s:
                continue
            async with self._launch_lock:
                if not self._pages and not self._busy and self._browser is not None:
                    log.info("browser_idle_close", idle_s=round(now - self._last_activity, 1))
                    await self._stop_browser()


def _import_cdp() -> Any:
    try:
        return importlib.import_module("runner.executors.browser.cdp")
    except ImportError as exc:
        raise LaunchError(f"pyppeteer is not installed ({exc}); reinstall plugkit with its dependencies") from None


def _consume(fut: asyncio.Future) -> None:
    if not fut.cancelled():
        fut.exception()
