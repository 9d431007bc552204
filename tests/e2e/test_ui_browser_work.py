"""The page in a real headless Chromium while a real `plugkit work` run (real daemon, real git,
the command worker) moves: the board shows items running, then one landed and one held, with
no reload; screenshots of three moments are saved (to $PLUGKIT_UI_SCREENSHOTS when set: the
README's pictures are made so)."""

import json
import os
from pathlib import Path

import pytest

from tests.support.work_cli import Work, commit_file
from tests.support.agent import make_repo
from tests.support.ui_browser import EXECUTABLE, headless

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(EXECUTABLE is None, reason="no Chromium on this machine")]

BOARD = "document.getElementById('work').textContent"


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "repo", 'gates = "advisory"\n')


async def test_a_work_run_moves_on_the_page_without_a_reload(home, repo, tmp_path):
    shots = Path(os.environ.get("PLUGKIT_UI_SCREENSHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    w = Work(home, repo, {"w1": [["say", "working on w1"], ["sleep", 4], *commit_file("w1.txt")],
                          "w2": [["write", "notes.txt", "I think it works"], ["commit", "wip"]],
                          "w3": [["sleep", 4], *commit_file("w3.txt")]})
    w.add("w1", "--verify", "test -f w1.txt")
    w.add("w2", "--verify", "test -f feature.txt")
    w.add("w3", "--verify", "test -f w3.txt", "--blocked-by", "w1")
    link = json.loads(home.cli("ui", "--json").stdout)["url"]
    async with headless(str(tmp_path / "chromium-home"), 1280, 1000) as browser:
        page = await browser.newPage()
        requested: list[str] = []
        page.on("request", lambda req: requested.append(req.url))
        await page.goto(link, waitUntil="load")
        await page.waitForFunction("document.getElementById('live').textContent === 'live'", timeout=30_000)
        await page.evaluate("window.__notReloaded = true")
        await page.screenshot({"path": str(shots / "1-before-the-run.png")})

        w.start("--afk", "--parallel", "2")
        await page.waitForFunction(f"{BOARD}.includes('w1') && document.querySelector('#work .badge.state-running')",
                                   timeout=60_000)
        await page.screenshot({"path": str(shots / "2-running.png")})

        # w1 lands, w2 is held for a replan, and the AFK run halts on it (w3 stays queued).
        try:
            await page.waitForFunction(f"{BOARD}.includes('replan') && !document.querySelector('#work .state-running')"
                                       " && !document.querySelector('#work .state-spawning')"
                                       " && !document.querySelector('#work .state-verifying')", timeout=90_000)
        finally:
            await page.screenshot({"path": str(shots / "3-landed-and-held.png")})
        assert await page.evaluate("window.__notReloaded === true")
        board = await page.evaluate(BOARD)
        items = w.items(w.status())
        assert items["w1"]["state"] == "completed" and items["w1"]["landed"][:12] in board, (items, board)
        assert items["w2"]["state"] == "blocked" and "next: plugkit" in board, board
        assert "landing queue on main" in board, board  # its table: w1 landed (issue 48 #4)
        workspaces = await page.evaluate("document.getElementById('gates').textContent")
        assert str(repo.resolve()) in workspaces and "worktrees" not in workspaces, workspaces
        own = f"http://127.0.0.1:{home.port}/"
        assert requested and all(url.startswith(own) for url in requested), requested
    for name in ("1-before-the-run.png", "2-running.png", "3-landed-and-held.png"):
        assert (shots / name).stat().st_size > 1000, name
