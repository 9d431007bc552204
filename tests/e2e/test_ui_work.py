"""The page's board of a real `plugkit work` run (real daemon, real git, the command worker):
/api/v1/work shows what `work status` shows (each item's state, attempts, worker task, check
and receipt, landed sha, why held), /api/v1/gates the workspace's phase, /api/v1/tasks
the workers' tasks."""

import http.client
import json
import urllib.parse
from pathlib import Path

import pytest

from tests.support.work_cli import Work, commit_file
from tests.support.agent import make_repo

pytestmark = pytest.mark.e2e


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "repo", 'gates = "advisory"\n')


class Page:
    """A signed-in page: the link `plugkit ui` printed, redeemed for the cookie."""

    def __init__(self, home) -> None:
        url = json.loads(home.cli("ui", "--json").stdout)["url"]
        parts = urllib.parse.urlsplit(url)
        self.port = parts.port
        status, headers, _ = self.get(f"{parts.path}?{parts.query}")
        assert status == 303, headers
        self.cookie = headers["Set-Cookie"].split(";", 1)[0]

    def get(self, path: str, cookie: str = "") -> tuple[int, dict, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("GET", path, headers={"Cookie": cookie} if cookie else {})
            answer = conn.getresponse()
            return answer.status, dict(answer.getheaders()), answer.read()
        finally:
            conn.close()

    def api(self, name: str) -> dict:
        status, _, body = self.get(f"/api/v1/{name}", self.cookie)
        assert status == 200, body
        return json.loads(body)


def test_the_board_shows_a_run_as_work_status_does(home, repo):
    w = Work(home, repo, {"w1": commit_file("w1.txt"),
                          "w2": [["write", "notes.txt", "I think it works"], ["commit", "wip"]]})
    w.add("w1", "--verify", "test -f w1.txt")
    w.add("w2", "--verify", "test -f feature.txt")
    page = Page(home)
    w.start("--afk")
    run = w.settled()
    board = page.api("work")["runs"]
    assert [r["id"] for r in board] == [run["id"]]
    shown = {i["id"]: i for i in board[0]["items"]}
    items = w.items(run)
    for key in ("state", "reason", "attempt", "task_id", "verify", "receipt", "landed", "message", "refused"):
        assert shown["w1"][key] == items["w1"][key] and shown["w2"][key] == items["w2"][key], key
    assert shown["w1"]["state"] == "completed" and shown["w1"]["verify"] == "green" and shown["w1"]["landed"]
    assert shown["w2"]["state"] == "blocked" and "verify_failed" in shown["w2"]["message"]
    assert board[0]["halt"] == run["halt"] and "replan" in board[0]["halt"]
    # The landing queue, as `work status --json` has it: w1 went green and landed (w2 never went green).
    assert board[0]["queue"] == run["queue"] and [(e["item"], e["state"]) for e in run["queue"]] == [("w1", "landed")]
    gates = page.api("gates")["workspaces"]
    assert str(repo.resolve()) in [g["workspace"] for g in gates], gates
    tasks = page.api("tasks")["tasks"]
    roles = {t["task_id"]: t["role"] for t in tasks}
    assert roles[items["w1"]["task_id"]] == "worker of w1" and roles[items["w2"]["task_id"]] == "worker of w2"
    assert roles[items["w1"]["verify_task_id"]] == "check of w1"
