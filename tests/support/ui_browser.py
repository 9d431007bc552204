"""A headless Chromium for the runner's page tests: spawned as the runner spawns its own
(runner/system/chromium.py, DevTools on a pipe, no port) and driven by pyppeteer."""

import asyncio
import contextlib
import secrets

from plugkit.chromium import ChromiumNotFound, find_chromium, sandbox_for
from runner.executors.browser import cdp
from runner.system.chromium import ChromiumProcess, ChromiumSpec

try:
    EXECUTABLE = find_chromium()
except ChromiumNotFound:  # the image ships Debian's chromium; a machine without one cannot run these
    EXECUTABLE = None


@contextlib.asynccontextmanager
async def headless(home: str, width: int = 1200, height: int = 900):
    """(browser) while the block runs; Chromium's whole tree is killed after it."""
    spec = ChromiumSpec(runner_id=f"ui{secrets.token_hex(3)}", home=home, kill_grace_s=1.0)
    chromium = await ChromiumProcess.spawn(spec, EXECUTABLE, sandbox_for(EXECUTABLE), lambda proc: None)
    try:
        browser = await asyncio.wait_for(cdp.connect(chromium.cdp, {"width": width, "height": height}), 30)
        try:
            yield browser
        finally:
            await browser.close()
    finally:
        await chromium.stop(exit_wait_s=2.0)
