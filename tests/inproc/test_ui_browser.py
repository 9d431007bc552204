"""The runner's page in a real headless Chromium: a person opens the one-time link, the page
signs in and shows a task that starts after it loaded, without a reload, and not one of its
requests leaves the runner's own address."""

import json

import pytest

from tests.support.inproc import auth, call
from tests.support.ui_browser import EXECUTABLE, headless


@pytest.mark.skipif(EXECUTABLE is None, reason="no Chromium on this machine")
async def test_the_page_signs_in_once_and_shows_a_task_live(make_client, tmp_path):
    client = await make_client()
    port = client.runtime.port
    link = (await (await client.post("/login", data="{}", headers=auth())).json())["url"]
    async with headless(str(tmp_path / "chromium-home")) as browser:
        page = await browser.newPage()
        requested: list[str] = []
        page.on("request", lambda req: requested.append(req.url))
        await page.goto(link, waitUntil="load")
        assert page.url == f"http://127.0.0.1:{port}/ui"
        await page.waitForFunction("document.getElementById('live').textContent === 'live'", timeout=30_000)
        await page.evaluate("window.__notReloaded = true")
        # The cookie is HttpOnly: the page's own script cannot read it.
        assert "plugkit_ui" not in await page.evaluate("document.cookie")

        res = await call(client, "task.exec", session_id="watched", cwd=str(tmp_path), lang="bash",
                         code="echo marker-from-the-task; sleep 30", wait_ms=0)
        task_id = res["task"]["task_id"]
        shown = "document.getElementById('tasks').textContent.includes('marker-from-the-task')"
        await page.waitForFunction(shown, timeout=30_000)
        assert await page.evaluate("window.__notReloaded === true")
        running = await page.evaluate("document.querySelector('#tasks .badge').textContent")
        assert running == "running"
        await call(client, "task.kill", session_id="watched", cwd=str(tmp_path), task_id=task_id)
        await page.waitForFunction("document.querySelector('#tasks .badge').textContent === 'killed'",
                                   timeout=30_000)
        assert await page.evaluate("window.__notReloaded === true")

        # The link was spent: a second browser tab opening it is refused.
        second = await browser.newPage()
        answer = await second.goto(link)
        assert answer.status == 403 and "plugkit ui" in json.loads(await answer.text())["error"]

        # A browser without the cookie (another profile) sees nothing of the page.
        stranger = await (await browser.createIncognitoBrowserContext()).newPage()
        answer = await stranger.goto(f"http://127.0.0.1:{port}/ui")
        assert answer.status == 401 and "marker-from-the-task" not in await answer.text()

        own = f"http://127.0.0.1:{port}/"
        assert requested and all(url.startswith(own) for url in requested), requested
