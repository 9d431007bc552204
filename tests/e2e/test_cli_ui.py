"""`plugkit ui` against the real daemon: it prints a one-time link the runner redeems once for
the page's cookie, and its help needs no runner."""

import http.client
import json
import urllib.parse

import pytest

pytestmark = pytest.mark.e2e


def open_link(url: str) -> tuple[int, dict, bytes]:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("GET", f"{parts.path}?{parts.query}")
        answer = conn.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        conn.close()


def test_plugkit_ui_prints_a_link_that_works_once(home):
    result = home.cli("ui", "--json")
    assert result.returncode == 0, result.stderr
    link = json.loads(result.stdout)
    assert link["url"].startswith(f"http://127.0.0.1:{home.port}/ui/login?t=")
    status, headers, _ = open_link(link["url"])
    assert status == 303 and headers["Location"] == "/ui"
    cookie = headers["Set-Cookie"]
    assert f"plugkit_ui_{home.port}=" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    status, _, body = open_link(link["url"])
    assert status == 403 and "plugkit ui" in json.loads(body)["error"]
    plain = home.cli("ui")
    assert plain.returncode == 0 and "/ui/login?t=" in plain.stdout and "works once" in plain.stdout
    home.stop_all()


def test_plugkit_ui_help_needs_no_runner(home):
    shown = home.cli("ui", "--help")
    assert shown.returncode == 0 and shown.stdout.startswith("usage: plugkit ui")
    assert home.runner_pids() == []
