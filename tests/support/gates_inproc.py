"""A repository for the in-process gate tests, and an honest walk of the gates up to VERIFY."""

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def make_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for key, value in (("user.name", "Test"), ("user.email", "test@example.invalid"), ("commit.gpgsign", "false")):
        git(path, "config", key, value)
    (path / "README").write_text("hello\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "init")
    return path


async def to_verify(rpc, content: str = "print('hi')\n") -> None:
    """PLAN -> EXECUTE -> EMIT -> VERIFY the honest way: declare, write, commit."""
    assert (await rpc("gate.advance", to="EXECUTE"))["ok"]
    assert (await rpc("gate.advance", to="EMIT"))["ok"]
    await rpc("gate.emit", files=[{"path": "app.py", "content": content}])
    (rpc.work / "app.py").write_text(content)
    git(rpc.work, "add", "app.py")
    git(rpc.work, "commit", "-q", "-m", "emit")
    assert (await rpc("gate.advance", to="VERIFY"))["ok"]
