"""The runner's page (`plugkit ui`) through the real app on a real port: who gets in (a
one-time link once, then its cookie; never /rpc; never a foreign Origin or Host), what the
read-only API answers, and the event stream pushing a change when a task starts."""

import asyncio
import json
import os
import subprocess
import sys

from tests.support.inproc import auth, call


async def mint(client) -> str:
    resp = await client.post("/login", data="{}", headers=auth())
    assert resp.status == 200, await resp.text()
    url = (await resp.json())["url"]
    assert url.startswith(f"http://127.0.0.1:{client.runtime.port}/ui/login?t=")
    return url.split("/ui/login", 1)[1]


async def sign_in(client) -> dict:
    """The Cookie header of a signed-in page."""
    resp = await client.get("/ui/login" + await mint(client), allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"] == "/ui"
    morsel = resp.cookies[f"plugkit_ui_{client.runtime.port}"]
    assert morsel["httponly"] and morsel["samesite"] == "Strict" and morsel["path"] == "/"
    return {"Cookie": f"{morsel.key}={morsel.value}"}


async def test_without_the_cookie_nothing_of_the_page_answers(make_client):
    client = await make_client()
    for path in ("/ui", "/ui/assets/app.js", "/api/v1/tasks", "/api/v1/events", "/api/v1/work"):
        resp = await client.get(path)
        assert resp.status == 401, path
        assert "plugkit ui" in (await resp.json())["error"]
        assert "frame-ancestors 'none'" in resp.headers["Content-Security-Policy"]
    # A made-up cookie is no cookie.
    resp = await client.get("/api/v1/tasks", headers={"Cookie": f"plugkit_ui_{client.runtime.port}=guess"})
    assert resp.status == 401


async def test_the_login_link_works_once(make_client):
    client = await make_client()
    query = await mint(client)
    first = await client.get("/ui/login" + query, allow_redirects=False)
    assert first.status == 303
    again = await client.get("/ui/login" + query, allow_redirects=False)
    assert again.status == 403 and "plugkit ui" in (await again.json())["error"]
    assert f"plugkit_ui_{client.runtime.port}" not in again.cookies
    assert (await client.get("/ui/login?t=made-up", allow_redirects=False)).status == 403


async def test_an_expired_login_link_is_refused(make_client, monkeypatch):
    from runner.http.ui import access

    client = await make_client()
    monkeypatch.setattr(access, "LINK_TTL_S", -1.0)  # minted already expired
    resp = await client.get("/ui/login" + await mint(client), allow_redirects=False)
    assert resp.status == 403


async def test_only_the_token_mints_a_link(make_client):
    client = await make_client()
    assert (await client.post("/login", data="{}", headers={"Content-Type": "application/json"})).status == 401
    cookie = await sign_in(client)
    resp = await client.post("/login", data="{}", headers={**cookie, "Content-Type": "application/json"})
    assert resp.status == 401


async def test_the_cookie_never_reaches_rpc_or_debug(make_client):
    client = await make_client()
    cookie = await sign_in(client)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "runner.info", "params": {}})
    resp = await client.post("/rpc", data=body, headers={**cookie, "Content-Type": "application/json"})
    assert resp.status == 401
    assert (await client.get("/debug", headers=cookie)).status == 401
    # and the page offers no way to change anything: no method but GET
    assert (await client.post("/api/v1/tasks", data="{}", headers={**cookie, "Content-Type": "application/json"})).status == 405


async def test_a_foreign_origin_or_host_is_refused(make_client):
    client = await make_client()
    cookie = await sign_in(client)
    port = client.runtime.port
    own = await client.get("/api/v1/tasks", headers={**cookie, "Origin": f"http://127.0.0.1:{port}"})
    assert own.status == 200
    for origin in ("http://evil.example", f"http://localhost:{port + 1}", "null"):
        resp = await client.get("/api/v1/tasks", headers={**cookie, "Origin": origin})
        assert resp.status == 403, origin
    assert (await client.get("/api/v1/tasks", headers={**cookie, "Sec-Fetch-Site": "cross-site"})).status == 403
    # DNS rebinding: evil.example resolved to 127.0.0.1 still sends its own Host.
    resp = await client.get("/api/v1/tasks", headers={**cookie, "Host": f"evil.example:{port}"})
    assert resp.status == 403
    # a login link opened from another site's page
    resp = await client.get("/ui/login" + await mint(client), headers={"Origin": "http://evil.example"},
                            allow_redirects=False)
    assert resp.status == 403


async def test_the_page_and_its_assets_under_a_strict_csp(make_client):
    client = await make_client()
    cookie = await sign_in(client)
    page = await client.get("/ui", headers=cookie)
    html = await page.text()
    assert page.status == 200 and '<script src="/ui/assets/app.js"' in html
    assert "<script>" not in html and "http" not in html.replace("http-equiv", "")  # nothing inline, nothing off-host
    csp = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe" not in csp
    assert page.headers["X-Frame-Options"] == "DENY"
    js = await client.get("/ui/assets/app.js", headers=cookie)
    assert js.status == 200 and js.content_type == "text/javascript"
    assert (await client.get("/ui/assets/..%2Fpages.py", headers=cookie)).status == 404


async def test_the_api_shows_tasks_sessions_work_and_gates(make_client, tmp_path):
    client = await make_client()
    cookie = await sign_in(client)
    res = await call(client, "task.exec", session_id="ui", cwd=str(tmp_path), lang="bash",
                     code="echo hello-page; sleep 30", wait_ms=0)
    task_id = res["task"]["task_id"]
    await call(client, "task.wait", session_id="ui", cwd=str(tmp_path), task_id=task_id,
               until_text="hello-page", timeout_ms=10_000)
    tasks = (await (await client.get("/api/v1/tasks", headers=cookie)).json())["tasks"]
    row = next(t for t in tasks if t["task_id"] == task_id)
    assert row["state"] == "running" and row["session_id"] == "ui" and row["lang"] == "bash"
    assert "hello-page" in row["tail"] and {"cpu_s", "memory_peak_bytes", "pid", "cwd"} <= set(row)
    sessions = (await (await client.get("/api/v1/sessions", headers=cookie)).json())["sessions"]
    assert [s["session_id"] for s in sessions] == ["ui"]
    assert (await (await client.get("/api/v1/work", headers=cookie)).json()) == {"runs": []}
    gates = (await (await client.get("/api/v1/gates", headers=cookie)).json())["workspaces"]
    assert [g["workspace"] for g in gates] == [os.path.realpath(tmp_path)]
    assert gates[0]["phase"] == "PLAN" and gates[0]["next_phase"] and isinstance(gates[0]["conditions"], list)
    assert all({"name", "holds", "value"} <= set(c) for c in gates[0]["conditions"])
    runner = await (await client.get("/api/v1/runner", headers=cookie)).json()
    assert runner["port"] == client.runtime.port and runner["api"] == 1
    missing = await client.get("/api/v1/approve", headers=cookie)
    assert missing.status == 404
    await call(client, "task.kill", session_id="ui", cwd=str(tmp_path), task_id=task_id)


async def read_version(resp) -> int:
    """The next `event: version` of the stream (keep-alive comments skipped)."""
    event = None
    while True:
        line = (await resp.content.readline()).decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: ") and event == "version":
            return json.loads(line[6:])["version"]


async def test_the_event_stream_pushes_when_a_task_starts(make_client, tmp_path):
    client = await make_client()
    cookie = await sign_in(client)
    resp = await client.get("/api/v1/events", headers=cookie)
    assert resp.status == 200 and resp.content_type == "text/event-stream"
    first = await asyncio.wait_for(read_version(resp), 30)
    res = await call(client, "task.exec", session_id="ev", cwd=str(tmp_path), lang="bash", code="sleep 30", wait_ms=0)
    moved = await asyncio.wait_for(read_version(resp), 30)
    assert moved > first
    tasks = (await (await client.get("/api/v1/tasks", headers=cookie)).json())["tasks"]
    assert res["task"]["task_id"] in [t["task_id"] for t in tasks]
    await call(client, "task.kill", session_id="ev", cwd=str(tmp_path), task_id=res["task"]["task_id"])
    assert await asyncio.wait_for(read_version(resp), 30) > moved  # and when it ends
    # The runner's stop ends an open stream: it does not wait on the page.
    await client._runner.cleanup()
    assert (await asyncio.wait_for(resp.content.read(), 30)).strip() == b""
    resp.close()


def test_a_runner_nobody_watches_never_imports_the_page():
    code = ("import sys; from runner.http import app, guards; "
            "print(sorted(m for m in sys.modules if m.startswith('runner.http.ui.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


async def test_no_page_path_spelling_reaches_rpc_or_debug_without_the_token(make_client):
    """The guard leaves page paths to the page's own check: a path that looks like one to the
    guard but routes to /rpc or /debug would skip the token."""
    client = await make_client()
    port = client.runtime.port
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "runner.info", "params": {}}).encode()
    for path in ("/ui/../rpc", "/api/v1/../../rpc", "/api/v1/..%2F..%2Frpc", "/ui/%2e%2e/rpc", "/ui/..%2frpc",
                 "/api/v1/%2E%2E/%2E%2E/debug", "/ui/../debug", "/ui%2F../rpc"):
        for method in ("POST", "GET"):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            answer = await reader.read()
            writer.close()
            await writer.wait_closed()
            head = answer.split(b"\r\n", 1)[0]
            assert b'"result"' not in answer and b'"runner"' not in answer, (method, path, answer[:300])
            assert head.split()[1] in (b"401", b"404", b"405", b"400"), (method, path, head)


async def test_a_login_navigation_from_a_local_file_signs_in_and_nothing_else_from_another_site_does(make_client):
    """`plugkit ui --open` hands the browser a local file that goes to the link: another site to
    the browser. That top-level navigation is let in, once, and answered with a page of ours that
    goes on to /ui (a redirect would carry the other site's navigation, with no Strict cookie);
    a fetch or a frame another site starts is not."""
    client = await make_client()
    nav = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    for other in ({**nav, "Sec-Fetch-Mode": "cors"}, {**nav, "Sec-Fetch-Dest": "iframe"},
                  {**nav, "Origin": "http://evil.example"}):
        query = await mint(client)
        refused = await client.get("/ui/login" + query, headers=other, allow_redirects=False)
        assert refused.status == 403, other
    query = await mint(client)
    first = await client.get("/ui/login" + query, headers=nav, allow_redirects=False)
    assert first.status == 200 and 'content="0;url=/ui"' in await first.text()
    assert first.cookies[f"plugkit_ui_{client.runtime.port}"]["samesite"] == "Strict"
    assert first.headers["X-Frame-Options"] == "DENY"
    assert (await client.get("/ui/login" + query, headers=nav, allow_redirects=False)).status == 403
