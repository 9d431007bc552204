"""A real git repository with known commits for the search tests, and `plugkit search --json` on it."""

import json
import subprocess

import pytest


GIT = ["git", "-c", "user.name=Tester", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]


def git(cwd, *args) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def commit(repo, files: dict, message: str) -> str:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "proj"
    r.mkdir()
    git(r, "init", "-q")
    commit(r, {
        "src/loader.py": "import json\n\n\ndef load_config(path):\n    '''Read the settings file.'''\n"
                         "    with open(path) as f:\n        return json.load(f)\n",
        "src/app.py": "from src.loader import load_config\n\n\ndef main():\n    cfg = load_config('a.json')\n"
                      "    return cfg\n",
        "tests/test_loader.py": "from src.loader import load_config\n\n\ndef test_load_config(tmp_path):\n"
                                "    assert load_config\n",
        ".gitignore": "secret/\n",
        "secret/hidden.py": "def load_config_secret():\n    pass\n",
        "logo.bin": b"\x89PNG\0\0load_config\0",
        "data/dump.txt": "load_config\n" * 120_000,  # over 1 MiB: data, not code
    }, "Add the config loader")
    commit(r, {"src/retry.py": "class RetryPolicy:\n    attempts = 3\n"},
           "Retry failed uploads\n\nUploads to the bucket failed on flaky networks; retry them three times.")
    return r


def search(home, repo, *args):
    done = home.cli("search", *args, cwd=repo)
    assert done.returncode == 0, done.stderr
    return done


def answer(home, repo, *args) -> dict:
    return json.loads(search(home, repo, *args, "--json").stdout)
