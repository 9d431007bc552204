"""exec:browser — one managed Chromium per runner, one private page per session, driven by pyppeteer.

The Executor: validates a browser script (browser_commands), then runs its line commands and
its JavaScript (browser_session) in the session's page, which BrowserManager (browser_manager)
provides from the one Chromium it keeps (browser_chromium).

Output of a browser task:
  stdout  one line per command (`goto 200 http://...`, `screenshot /abs/path.png`), then the
          JSON of the JavaScript's return value (nothing when it returns undefined)
  stderr  `[console.log] ...`, `[console.error] ...`, `[pageerror] ...`, `[dialog.alert] ...`
          lines the page produced while the task ran, and a thrown error's stack
  info    plugkit's notes (Chromium relaunched, the session's page was replaced)
Reasons: completed, js_error, command_failed, page_lost, browser_crashed (Chromium died under
the task; the next task relaunches it), browser_unavailable (plus the manager's timeout /
killed / session_end / runner_shutdown).
"""

from __future__ import annotations

import asyncio
import os
from typing import Optional

from plugkit.refusals import Invalid, Unavailable
from runner.executors.browser import commands
from runner.executors.base import ExecSpec, Outcome, Prepared, SessionKey, TaskIO
from plugkit import chromium as chromium_rule
from runner.system.chromium import ChromiumSpec, LaunchError
from runner.executors.browser.manager import BrowserManager, BrowserSpec
from runner.executors.browser.session import NOTE_STREAM, PageGone, SessionPage


class BrowserRun:
    """The Execution of one browser task: no stdin; kill closes the session's context, so a
    page stuck in a loop dies with it while the browser and other sessions' pages live on."""

    pid = None

    def __init__(self, browsers: BrowserManager, key: SessionKey) -> None:
        self.browsers, self.key = browsers, key
        self.work: Optional[asyncio.Task] = None
        self.holding = False  # owns the session's page now (not still queued behind another task)
        self.killed = False

    def input_open(self) -> bool:
        return False

    def write(self, data: bytes) -> None:
        return None

    def close_input(self) -> None:
        return None

    async def kill(self) -> None:
        self.killed = True
        if self.holding:
            await self.browsers.drop_page(self.key, "its task was killed")
        if self.work is not None and not self.work.done():
            self.work.cancel()


class BrowserExecutor:
    name = "browser"

    def __init__(self, spec: BrowserSpec) -> None:
        self.browsers = BrowserManager(spec)

    def claims(self, lang: str) -> bool:
        return lang == "browser"

    async def prepare(self, p: ExecSpec) -> Prepared:
        if p.stdin:
            raise Invalid("browser tasks read no stdin; type into the page with a `type SELECTOR TEXT` line")
        if p.env:
            raise Invalid("browser tasks take no env: the page runs in "
                          "the runner's shared Chromium, not in a process of its own")
        try:
            self.browsers.check_installed()
        except LaunchError as exc:
            raise Unavailable(str(exc)) from None
        try:
            script = commands.parse(p.code, os.path.realpath(p.cwd))
        except commands.ScriptError as exc:
            raise Invalid(str(exc), {"help": commands.help_text()}) from None
        return Prepared("browser", script)

    async def run(self, task: TaskIO, prepared: Prepared, p: ExecSpec) -> Outcome:
        execution = BrowserRun(self.browsers, task.session)
        task.started(execution)
        execution.work = asyncio.ensure_future(self._work(task, prepared.payload, execution))
        try:
            return await execution.work
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if execution.killed and not (me and me.cancelling()):
                # Our kill cancelled the work; the manager records why (timeout, kill, session end).
                return Outcome("failed", "killed")
            raise

    async def end_session(self, key: SessionKey) -> None:
        await self.browsers.end_session(key)

    async def close(self) -> None:
        await self.browsers.close()

    def snapshot(self) -> dict:
        return self.browsers.snapshot()

    async def status(self) -> dict:
        return await self.browsers.status()

    # --- one task ---------------------------------------------------------------

    async def _work(self, task: TaskIO, script: commands.Script, run: BrowserRun) -> Outcome:
        async with self.browsers.turn(task.session):
            run.holding = True
            try:
                page = await self.browsers.page_for(task.session, lambda text: _write(task, NOTE_STREAM, text))
            except LaunchError as exc:
                return _fail(task, "browser_unavailable", f"task_{task.id}: {exc}")
            except Exception as exc:  # the browser broke while we opened the page
                return _fail(task, "browser_unavailable", f"task_{task.id} could not open a page: "
                             f"{str(exc) or 'Chromium did not answer'}")
            page.sink = task
            try:
                return await self._script(task, page, script, run)
            finally:
                page.sink = None
                run.holding = False

    async def _script(self, task: TaskIO, page: SessionPage, script: commands.Script, run: BrowserRun) -> Outcome:
        env = commands.Env(page.page, task.cwd, task.id,
                           lambda: self.browsers.drop_page(task.session, "closed by the `close` command"))
        try:
            for step in script.steps:
                command = commands.COMMANDS[step.name]
                try:
                    pending = command.run(env, step.args)
                    line = await (page.run(pending) if command.guarded else pending)
                except PageGone:
                    raise
                except Exception as exc:  # CommandFailed, or a pyppeteer error we did not word
                    if page.gone.done():  # "Target closed": the page (or browser) went first
                        raise PageGone(page.gone.result()) from None
                    why = f"line {step.line}: {exc if isinstance(exc, commands.CommandFailed) else _oneline(exc)}"
                    _write(task, "stderr", why)
                    return Outcome("failed", "command_failed", message=f"task_{task.id}: {why}")
                _write(task, "stdout", line)
            if not script.js.strip():
                return Outcome("completed", "completed")
            result = await page.evaluate(script.js, script.js_line)
        except PageGone as exc:
            return await self._page_gone(task, exc, run)
        except Exception as exc:  # pyppeteer's evaluation errors: syntax errors, navigation mid-call
            if page.gone.done():  # "Target closed": the page (or browser) went first
                return await self._page_gone(task, PageGone(page.gone.result()), run)
            text = page.rename(str(exc).removeprefix("Evaluation failed: "))
            _write(task, "stderr", text)
            return Outcome("failed", "js_error", message=f"task_{task.id}: {_oneline(text) if text else exc}")
        if result.get("error"):
            headline = f"{result['name']}: {result['message']}"
            _write(task, "stderr", page.rename(result["stack"] or headline))
            return Outcome("failed", "js_error", message=f"task_{task.id} threw {headline[:300]}")
        if "json" in result:
            _write(task, "stdout", result["json"])
        elif "text" in result:
            _write(task, "stdout", result["text"])
            if result.get("note"):
                _write(task, NOTE_STREAM, f"[plugkit] the return value is not JSON ({result['note']}); "
                                          "printed String(value) instead")
        return Outcome("completed", "completed")


    async def _page_gone(self, task: TaskIO, exc: PageGone, run: BrowserRun) -> Outcome:
        if run.killed:  # our kill closed the page under the script: the manager says why
            return Outcome("failed", "killed")
        if exc.browser_crashed:
            how = await self.browsers.crash_text()
            return _fail(task, "browser_crashed", f"task_{task.id}: browser crashed ({how}); "
                                                  "the next browser task relaunches it")
        return _fail(task, "page_lost", f"task_{task.id} lost its page: {exc}")


def _oneline(exc: object) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else exc.__class__.__name__


def _write(task: TaskIO, stream: str, text: str) -> None:
    task.write_text(stream, text if text.endswith("\n") else text + "\n")


def _fail(task: TaskIO, reason: str, message: str) -> Outcome:
    _write(task, "stderr", message)
    return Outcome("failed", reason, message=message)


def make(ctx) -> BrowserExecutor:
    # PLUGKIT_CHROMIUM and PLUGKIT_BROWSER_IDLE_S were read at boot (plugkit.config.RunnerConfig).
    return BrowserExecutor(BrowserSpec(
        chromium=ChromiumSpec(runner_id=ctx.runner_id, home=ctx.home, kill_grace_s=ctx.limits.kill_grace_s),
        # PATH as the runner got it: the lookup runs again at each launch (a later install is found).
        environ={**({chromium_rule.ENV: ctx.chromium} if ctx.chromium else {}),
                 **({"PATH": os.environ["PATH"]} if "PATH" in os.environ else {})},
        idle_s=ctx.browser_idle_s, session_idle_s=ctx.limits.session_idle_s))
