"""Each guard is tested by the attack it stops, with the status code it answers."""

import json

from plugkit.config import Limits
from tests.support.inproc import TOKEN, auth

INFO = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "runner.info", "params": {}})


async def test_health_needs_no_token_and_says_only_who_we_are(make_client):
    client = await make_client()
    resp = await client.get("/health")
    assert resp.status == 200
    body = await resp.json()
    assert set(body) == {"ok", "pid", "version", "service"}
    assert body["service"] == "plugkit-runner" and body["ok"] is True


async def test_rejects_rebinding_host(make_client):
    client = await make_client()
    port = client.runtime.port
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1:1", f"127.0.0.2:{port}", ""):
        resp = await client.post("/rpc", data=INFO, headers=auth(Host=host))
        assert resp.status == 403, host


async def test_accepts_every_loopback_name_for_our_port(make_client):
    client = await make_client()
    port = client.runtime.port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}"):
        resp = await client.post("/rpc", data=INFO, headers=auth(Host=host))
        assert resp.status == 200, host


async def test_rejects_any_origin_even_with_token(make_client):
    client = await make_client()
    for origin in ("http://evil.example", "null", f"http://127.0.0.1:{client.runtime.port}"):
        resp = await client.post("/rpc", data=INFO, headers=auth(Origin=origin))
        assert resp.status == 403
        assert not any(h.lower().startswith("access-control") for h in resp.headers)
    resp = await client.get("/health", headers={"Origin": "http://evil.example"})
    assert resp.status == 403


async def test_preflight_options_is_not_allowed(make_client):
    client = await make_client()
    resp = await client.options("/rpc", headers={"Access-Control-Request-Method": "POST"})
    assert resp.status == 405
    assert not any(h.lower().startswith("access-control") for h in resp.headers)


async def test_rejects_missing_or_wrong_token(make_client):
    client = await make_client()
    for headers in ({"Content-Type": "application/json"},
                    {"Content-Type": "application/json", "Authorization": "Bearer wrong"},
                    {"Content-Type": "application/json", "Authorization": TOKEN},
                    {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}x"}):
        resp = await client.post("/rpc", data=INFO, headers=headers)
        assert resp.status == 401


async def test_rejects_simple_request_content_types(make_client):
    client = await make_client()
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        resp = await client.post("/rpc", data=INFO, headers=auth(**{"Content-Type": ctype}))
        assert resp.status == 415, ctype


async def test_rejects_oversized_body(make_client):
    client = await make_client(limits=Limits(max_body_bytes=1024))
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "runner.info", "params": {}, "pad": "x" * 2000})
    resp = await client.post("/rpc", data=big, headers=auth())
    assert resp.status == 413


async def test_rejects_oversized_batch_before_running_anything(make_client):
    client = await make_client(limits=Limits(max_batch=4))
    batch = [{"jsonrpc": "2.0", "id": i, "method": "runner.info", "params": {}} for i in range(5)]
    resp = await client.post("/rpc", data=json.dumps(batch), headers=auth())
    body = await resp.json()
    assert body["error"]["code"] == -32600
    assert sum(client.runtime.requests.values()) == 0


async def test_refusals_are_logged_without_the_token(make_client, caplog):
    client = await make_client()
    await client.post("/rpc", data=INFO, headers=auth(Host="evil.example"))
    await client.post("/rpc", data=INFO, headers={"Authorization": f"Bearer {TOKEN}zz",
                                                  "Content-Type": "application/json"})
    text = caplog.text
    assert "bad_host" in text and "bad_token" in text
    assert TOKEN not in text
