"""exec:browser through the real app: real Chromium, pages served by the test on 127.0.0.1."""

import asyncio
import os
import signal
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psutil
import pytest

from runner.http.keys import CONTEXT
from runner.system.chromium import BROWSER_TAG, LaunchError, find_executable
from runner.system import kill as kill_mod
from tests.support.inproc import RpcError, call

PAGES = {
    "/": """<!doctype html><title>plugkit test</title>
<h1 id="t">Hello from the test</h1><input id="q">
<button id="b" onclick="document.getElementById('t').textContent = 'clicked'">go</button>""",
    "/noisy": """<!doctype html><title>noisy</title><p>noisy</p>
<script>
console.log("page loaded", 42, {ok: true});
console.warn("careful");
setTimeout(() => { throw new Error("async boom"); }, 0);
</script>""",
}


@pytest.fixture(autouse=True)
def chromium_installed():
    try:
        find_executable()
    except LaunchError as exc:
        pytest.fail(f"exec:browser tests need Chromium: {exc}. Run `apt-get install -y chromium` (CI does).")


@pytest.fixture
def site():
    """A tiny HTTP server on 127.0.0.1 in a thread (no process to leak)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            body = PAGES.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write((body or "<p>not found</p>").encode())

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
async def br(make_client, tmp_path):
    client = await make_client()
    work = tmp_path / "work"
    work.mkdir()

    async def do(code: str, session: str = "s1", wait_ms: int = 30_000, **params):
        res = await call(client, "task.exec", session_id=session, cwd=str(work), lang="browser",
                         code=code, wait_ms=wait_ms, **params)
        return res

    do.client, do.work = client, work
    do.executor = next(e for e in client.server.app[CONTEXT].tasks.executors if e.name == "browser")
    return do


def text(res: dict, stream: str) -> str:
    return "".join(c["text"] for c in res["output"]["chunks"] if c["stream"] == stream)


def browser_procs(br) -> list:
    return kill_mod.find_tagged(br.client.runtime.runner_id, BROWSER_TAG)


async def until_dead(pid: int) -> None:
    """Until pid is a zombie or gone. Not psutil's wait(): it would reap the runner's child
    before asyncio's watcher sees its exit status."""
    for _ in range(200):
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"pid {pid} did not die")


async def test_goto_reads_dom_text_and_drives_the_page(br, site):
    res = await br(f"goto {site}/\nreturn document.querySelector('#t').textContent")
    assert res["task"]["state"] == "completed", res
    assert text(res, "stdout") == f'goto 200 {site}/\n"Hello from the test"\n'
    res = await br("wait #q 2000\ntype #q hello world\nclick #b\n"
                   "await new Promise(r => setTimeout(r, 10));\n"
                   "return [document.querySelector('#q').value, document.querySelector('#t').textContent, 1n]"
                   ".map(String)")
    assert res["task"]["state"] == "completed", res
    assert text(res, "stdout").splitlines()[-1] == '["hello world","clicked","1"]'
    res = await br("return 1+1")
    assert text(res, "stdout") == "2\n"
    res = await br("document.title = 'x'")  # no return: nothing printed
    assert res["task"]["state"] == "completed" and text(res, "stdout") == ""
    res = await br("wait #never 200")
    assert res["task"]["reason"] == "command_failed" and "nothing matched '#never'" in text(res, "stderr")


async def test_console_page_errors_and_thrown_errors_are_captured(br, site):
    res = await br(f"goto {site}/noisy\nawait new Promise(r => setTimeout(r, 50));\n"
                   "console.log('from task', {a: [1, 2]}, null, 1n);\nconsole.error('bad thing');\nreturn null")
    assert res["task"]["state"] == "completed", res
    err = text(res, "stderr")
    for line in ('[console.log] page loaded 42 {ok: true}', "[console.warn] careful",
                 "[pageerror] Error: async boom", "[console.log] from task {a: Array(2)} null 1n",
                 "[console.error] bad thing"):
        assert line in err, err
    assert text(res, "stdout").endswith("null\n")
    res = await br("const x = 1;\nthrow new TypeError('nope ' + x)")
    task = res["task"]
    assert task["state"] == "failed" and task["reason"] == "js_error"
    assert "TypeError: nope 1" in task["message"]
    assert f"task_{task['task_id']}:2:" in text(res, "stderr")  # the stack points at the script's line 2
    res = await br("return 1 +* 2")
    assert res["task"]["reason"] == "js_error" and "SyntaxError" in text(res, "stderr")
    res = await br("alert('hi'); return confirm('sure?')")  # a dialog would block the page forever
    assert text(res, "stdout") == "false\n"
    assert "[dialog.alert] hi (dismissed)" in text(res, "stderr")


async def test_crashed_page_is_replaced_on_a_later_task(br, site):
    await br(f"goto {site}/\nreturn 1")
    await br("goto chrome://crash")  # the renderer dies; Chromium and the session live on
    for _ in range(3):  # the crash is reported by an event that may land in the next task
        res = await br("return location.href")
        if res["task"]["state"] == "completed":
            break
        assert res["task"]["reason"] == "page_lost" and "the page crashed" in text(res, "stderr")
    assert text(res, "stdout") == '"about:blank"\n'
    assert "this session's page was lost (the page crashed); opened a fresh one" in text(res, "info")
    assert br.executor.snapshot()["launches"] == 1


async def test_screenshot_is_a_png_of_the_viewport_inside_the_workspace(br, site):
    res = await br(f"goto {site}/\nviewport 640 360\nscreenshot shots/page.png\nscreenshot")
    assert res["task"]["state"] == "completed", res
    out = text(res, "stdout").splitlines()
    default = br.work / ".plugkit" / "evidence" / "screenshots" / f"task_{res['task']['task_id']}.png"
    assert out[-2:] == [f"screenshot {os.path.realpath(br.work / 'shots' / 'page.png')}",
                        f"screenshot {os.path.realpath(default)}"]
    for path in (br.work / "shots" / "page.png", default):
        head = path.read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
        assert struct.unpack(">II", head[16:24]) == (640, 360)
    with pytest.raises(RpcError) as escape:
        await br("screenshot ../outside.png")
    assert escape.value.code == -32602 and "outside the session's directory" in str(escape.value)
    assert not (br.work.parent / "outside.png").exists()


async def test_script_errors_are_refused_before_anything_runs(br):
    for code, words in (("screenshoot out.png", "unknown browser command 'screenshoot'"),
                        ("viewport big", "viewport takes a width and a height"),
                        ("close\nreturn 1", "nothing may follow `close`")):
        with pytest.raises(RpcError) as bad:
            await br(code)
        assert bad.value.code == -32602 and words in str(bad.value), (code, str(bad.value))
    assert browser_procs(br) == []  # refused before any browser was started


async def test_sessions_do_not_share_storage(br, site):
    first = await br(f"goto {site}/\nlocalStorage.setItem('who', 's1'); return localStorage.getItem('who')")
    assert text(first, "stdout").endswith('"s1"\n')
    other = await br(f"goto {site}/\nreturn localStorage.getItem('who')", session="s2")
    assert text(other, "stdout").endswith("null\n")
    again = await br("return localStorage.getItem('who')")
    assert text(again, "stdout") == '"s1"\n'


async def test_killed_chromium_is_relaunched_once_and_the_next_task_says_so(br, site):
    await br(f"goto {site}/\nreturn 1")
    await br(f"goto {site}/\nreturn 2", session="s2")
    pid = br.executor.snapshot()["pid"]
    os.kill(pid, signal.SIGKILL)
    await until_dead(pid)
    res = await br("return location.href")
    assert res["task"]["state"] == "completed", res
    info = text(res, "info")
    assert "Chromium was killed by signal 9; relaunching it" in info and "Chromium relaunched" in info
    assert "this session's page was lost (Chromium was killed by signal 9)" in info
    assert text(res, "stdout") == '"about:blank"\n'  # a fresh page
    snap = br.executor.snapshot()
    assert snap["launches"] == 2 and snap["crashes"] == 1 and snap["pid"] != pid
    other = await br("return 3", session="s2")
    assert other["task"]["state"] == "completed"
    assert "this session's page was lost (Chromium was killed by signal 9)" in text(other, "info")
    assert br.executor.snapshot()["launches"] == 2  # one relaunch served both sessions


async def test_session_end_closes_its_context(br, site):
    await br(f"goto {site}/\nreturn 1")
    await br("return 2", session="s2")
    contexts = len(br.executor.real().browsers._browser.browserContexts)
    await call(br.client, "session.end", session_id="s1", cwd=str(br.work))
    assert [p["session_id"] for p in br.executor.snapshot()["pages"]] == ["s2"]
    assert len(br.executor.real().browsers._browser.browserContexts) == contexts - 1
    res = await br("return location.href")  # the session starts over on a fresh page
    assert text(res, "stdout") == '"about:blank"\n'


async def test_forever_loop_times_out_without_hurting_other_sessions(br, site):
    await br(f"goto {site}/\nwindow.mark = 7; return 0", session="s2")
    pid = br.executor.snapshot()["pid"]
    hung = await br("while (true) {}", timeout_ms=1500, wait_ms=0)
    task_id = hung["task"]["task_id"]
    await asyncio.sleep(0.3)
    meanwhile = await br("return window.mark", session="s2")
    assert text(meanwhile, "stdout") == "7\n"
    done = await call(br.client, "task.wait", session_id="s1", cwd=str(br.work), task_id=task_id,
                      timeout_ms=15_000)
    assert done["task"]["state"] == "timed_out" and done["task"]["reason"] == "timeout"
    after = await br("return window.mark", session="s2")
    assert text(after, "stdout") == "7\n"  # same page, same context: untouched
    fresh = await br("return 1")
    assert fresh["task"]["state"] == "completed" and text(fresh, "stdout") == "1\n"
    assert br.executor.snapshot()["pid"] == pid  # the browser itself was never restarted


async def test_idle_browser_closes_and_shutdown_leaves_no_chromium(make_client, tmp_path, site):
    client = await make_client(browser_idle_s=0.3)
    executor = next(e for e in client.server.app[CONTEXT].tasks.executors if e.name == "browser")
    runner_id = client.runtime.runner_id
    res = await call(client, "task.exec", session_id="s1", cwd=str(tmp_path), lang="browser",
                     code=f"goto {site}/\nclose", wait_ms=30_000)
    assert text(res, "stdout").splitlines()[-1].startswith("close: the session's page is closed")
    assert executor.snapshot()["pages"] == [] and kill_mod.find_tagged(runner_id, BROWSER_TAG)
    for _ in range(100):  # the browser outlives its last page until the idle time passes
        if not executor.snapshot()["running"] and not kill_mod.find_tagged(runner_id, BROWSER_TAG):
            break
        await asyncio.sleep(0.05)
    assert not executor.snapshot()["running"] and kill_mod.find_tagged(runner_id, BROWSER_TAG) == []
    await call(client, "task.exec", session_id="s1", cwd=str(tmp_path), lang="browser",
               code="return 1", wait_ms=30_000)
    assert kill_mod.find_tagged(runner_id, BROWSER_TAG)
    await client.close()  # runner shutdown: every Chromium process goes with it
    assert kill_mod.find_tagged(runner_id, BROWSER_TAG) == []


async def test_chromium_dying_under_a_task_ends_it_as_a_browser_crash_and_the_next_task_relaunches(br, site):
    await br(f"goto {site}/\nreturn 1")
    pid = br.executor.snapshot()["pid"]
    hung = await br("await new Promise(resolve => setTimeout(resolve, 60000))", wait_ms=0)
    task_id = hung["task"]["task_id"]
    for _ in range(200):  # until the task holds the page
        if any(p["busy"] for p in br.executor.snapshot()["pages"]):
            break
        await asyncio.sleep(0.025)
    os.kill(pid, signal.SIGKILL)  # the DevTools pipe reaches EOF under the running evaluate
    done = await call(br.client, "task.wait", session_id="s1", cwd=str(br.work), task_id=task_id,
                      timeout_ms=15_000)
    assert done["task"]["state"] == "failed" and done["task"]["reason"] == "browser_crashed", done
    assert done["task"]["message"] == (f"task_{task_id}: browser crashed (Chromium was killed by signal 9); "
                                       "the next browser task relaunches it")
    res = await br("return 2")
    assert res["task"]["state"] == "completed" and text(res, "stdout") == "2\n"
    assert "Chromium was killed by signal 9; relaunching it" in text(res, "info")
    assert br.executor.snapshot()["pid"] != pid
