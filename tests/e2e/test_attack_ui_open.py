"""`plugkit ui --open` hands the browser no secret on its command line: argv is world-readable
in /proc, so another local user watching for the browser's start could redeem the one-time
link first (the browser takes a while to start) and hold the person's page session. The browser
is given a 0600 file in the runner's home instead, which navigates to the link; the runner
accepts that navigation (a file page is another site to the browser) and a real headless
Chromium ends on the page signed in. Real CLI, real runner, real Chromium."""

import asyncio
import stat
from pathlib import Path

import pytest
from pyppeteer.errors import NetworkError

from tests.support.ui_browser import EXECUTABLE, headless

pytestmark = pytest.mark.e2e


def _opened(home, tmp_path) -> tuple[list[str], str]:
    """What `ui --open` hands the browser ($BROWSER, as Python's webbrowser reads it)."""
    record = tmp_path / "argv.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\n')
    browser.chmod(0o755)
    done = home.cli("ui", "--open", env={"BROWSER": str(browser)})
    assert done.returncode == 0, done.stderr
    return record.read_text().splitlines(), done.stdout


def test_the_browsers_command_line_holds_no_login_secret(home, tmp_path):
    argv, printed = _opened(home, tmp_path)
    secret = printed.split("t=", 1)[1].split()[0]
    assert argv and not any(secret in a or "t=" in a for a in argv), argv
    handed = Path(argv[-1].removeprefix("file://"))
    assert stat.S_IMODE(handed.stat().st_mode) == 0o600 and secret in handed.read_text()
    assert stat.S_IMODE(handed.parent.stat().st_mode) & 0o077 == 0


@pytest.mark.skipif(EXECUTABLE is None, reason="no Chromium on this machine")
async def test_the_file_the_browser_is_given_signs_it_in(home, tmp_path):
    argv, _ = _opened(home, tmp_path)
    async with headless(str(tmp_path / "chromium-home")) as browser:
        page = await browser.newPage()
        await page.goto(argv[-1])
        want, live = f"http://127.0.0.1:{home.port}/ui", None
        for _ in range(600):  # the file's refresh, then ours: each navigation ends the last look
            try:
                live = await page.evaluate("(document.getElementById('live') || {}).textContent || null")
            except NetworkError:
                live = None
            if page.url == want and live == "live":
                break
            await asyncio.sleep(0.05)
        assert (page.url, live) == (want, "live"), (page.url, live)
