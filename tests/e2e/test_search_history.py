"""The history index end to end: a real repository built here, the real CLI and runner. A commit
whose subject never names the thing is found by its diff; commits amended or rebased away leave
the index, so "why" is never answered with a commit HEAD no longer reaches."""

import json

import pytest

from tests.support.search_repo import commit, git

pytestmark = pytest.mark.e2e


def commits(home, repo, *query) -> list[str]:
    done = home.cli("search", *query, "--history", "--json", cwd=repo)
    assert done.returncode == 0, done.stderr
    return [c["hash"] for c in json.loads(done.stdout)["commits"]]


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "proj"
    r.mkdir()
    git(r, "init", "-q")
    commit(r, {"src/net.py": "def fetch(url):\n    return get(url, timeout=5)\n"}, "Add the fetcher")
    return r


def test_why_did_x_change_finds_a_commit_whose_subject_does_not_name_x(home, repo):
    tweak = commit(repo, {"src/net.py": "def fetch(url):\n    return get(url, timeout=30, backoff_jitter=True)\n"},
                   "Be gentler with slow mirrors")
    commit(repo, {"README.md": "fetcher docs\n"}, "Document the fetcher")
    assert commits(home, repo, "why", "did", "backoff_jitter", "change")[0] == tweak
    # Split like any identifier: the parts of the added name find it too.
    assert tweak in commits(home, repo, "when was jitter added")


def test_an_amended_commit_leaves_the_index(home, repo):
    first = commit(repo, {"src/cache.py": "X = 1\n"}, "Drop the stale thumbnail cache")
    assert commits(home, repo, "thumbnail") == [first]
    git(repo, "commit", "-q", "--amend", "-m", "Drop the stale avatar cache")
    amended = git(repo, "rev-parse", "HEAD")
    assert commits(home, repo, "thumbnail") == []  # the old commit is still an object, but unreachable
    assert commits(home, repo, "avatar") == [amended]


def test_a_rebase_replaces_the_rewritten_commits(home, repo):
    git(repo, "checkout", "-q", "-b", "topic")
    old = commit(repo, {"src/quota.py": "LIMIT = 10\n"}, "Raise the upload quota")
    git(repo, "checkout", "-q", "main")
    base = commit(repo, {"src/other.py": "Y = 2\n"}, "Unrelated change on main")
    git(repo, "checkout", "-q", "topic")
    assert commits(home, repo, "quota") == [old]
    git(repo, "rebase", "-q", "main")
    new = git(repo, "rev-parse", "HEAD")
    assert new != old and commits(home, repo, "quota") == [new]
    assert commits(home, repo, "unrelated") == [base]  # what the rebase brought in is indexed
    git(repo, "reset", "-q", "--hard", "HEAD~2")  # back past both: neither is reachable now
    assert commits(home, repo, "quota") == [] and commits(home, repo, "unrelated") == []
