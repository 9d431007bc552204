"""An attempt as a Ray node's side hands it to its node's runner (work.run), for the in-process
tests of that runner: a worktree made as the node makes one (a bare clone cache, the worker's
objects in a directory of its own), work.run's params, calls with a worker's capability, and
work.read followed to the worker's end."""

import json
import os
import subprocess

from tests.support.inproc import auth, call

SESSION = "plugkit-work-ab12cd34-w1-1"
ENV = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}


def git(cwd, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout.strip()


def node_worktree(tmp_path):
    """(worktree, base): a linked worktree on plugkit/w1 of a bare clone cache, as
    runner/node/clone.py makes it (the runner reads a worker's git state only through a worktree
    whose admin dir names it back), its objects going to its own dir (runner/system/worker_objects.py)."""
    from runner.system import worker_objects

    src, cache, wt = tmp_path / "src", tmp_path / "cache.git", tmp_path / "attempt" / "wt"
    src.mkdir()
    git(src, "init", "-q", "-b", "main")
    git(src, "config", "user.email", "w@example.invalid")
    git(src, "config", "user.name", "w")
    (src / "README").write_text("a project\n")
    git(src, "add", "-A")
    git(src, "commit", "-qm", "base")
    git(tmp_path, "clone", "-q", "--bare", str(src), str(cache))
    wt.parent.mkdir()
    git(cache, "worktree", "add", "-q", "-b", "plugkit/w1", str(wt), "main")
    git(wt, "config", "user.email", "w@example.invalid")
    git(wt, "config", "user.name", "w")
    worker_objects.prepare(str(wt), str(cache))
    return wt, git(wt, "rev-parse", "HEAD")


def run_params(wt, base, owner: int, script: str, sandbox: bool = False, **more) -> dict:
    return dict(worktree=str(wt), session_id=SESSION, run="ab12cd34", item="w1", attempt=1, branch="plugkit/w1",
                base=base, owner_pid=owner, argv=["sh", "-c", script], stdin="", env={**ENV, **more.pop("env", {})},
                sandbox=sandbox, **more)


async def as_token(client, token: str, method: str, **params):
    """(HTTP status, JSON-RPC answer) of a call made with `token` (a worker's capability)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    resp = await client.post("/rpc", data=body, headers={**auth(), "Authorization": f"Bearer {token}"})
    return resp.status, (await resp.json() if resp.status == 200 else None)


async def read_to_end(client, session: str = SESSION) -> tuple[str, dict]:
    """The worker's whole output and work.read's last answer (its end)."""
    out, cursor = [], 0
    while True:
        got = await call(client, "work.read", session_id=session, cursor=cursor, wait_s=2)
        out.append(got["data"])
        cursor = got["cursor"]
        if got["ended"]:
            return "".join(out), got
