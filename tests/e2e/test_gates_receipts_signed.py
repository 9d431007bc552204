"""Receipts anyone can check (issue 44, item 1): each receipt the runner writes is signed with its
Ed25519 key, binding the commit and tree checked, the command, the environment, exit code, output
digest and duration. Checked for real through the CLI and the runner, in a git repository with
gates = "enforce": one byte edited, a receipt of another tree, another runner's key, and a
check on a "second machine" (a fresh PLUGKIT_HOME with no runner, only the public key)."""

import json
import subprocess

import pytest

from plugkit.lifecycle import evidence
from tests.support.agent import Agent, git, make_repo

pytestmark = pytest.mark.e2e


@pytest.fixture
def agent(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "enforce"\nverify = "test -f README"\n')
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    agent.plugkit("prd", "add", "keep the README", "--id", "w1", "--verify", "test -f README")
    return agent


def cli(home, *args, cwd, env=None) -> subprocess.CompletedProcess:
    return home.cli(*args, cwd=cwd, env=env)


def test_a_checks_receipt_is_signed_and_verifies_offline_with_only_the_public_key(agent, home, tmp_path):
    repo = agent.repo
    green = agent.json("prd", "verify", "w1")
    rid, head = green["receipt"], git(repo, "rev-parse", "HEAD").strip()
    body = json.loads((repo / ".plugkit" / "evidence" / f"{rid}.json").read_text())
    run = body["run"]
    assert body["sig"] and run["commit"] == head and run["tree"] == git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert run["command"] == "test -f README" and run["exit_code"] == 0 and run["duration_s"] is not None
    assert run["output_sha256"] == body["sha256"] and len(run["env_digest"]) == 64 and "PATH" in run["env_vars"]

    key = cli(home, "key", "show", cwd=repo).stdout.strip()
    assert key.startswith("ed25519:")
    assert oct((home.path / "receipts.ed25519").stat().st_mode & 0o777) == "0o600"
    mine = cli(home, "receipt", "verify", rid[:8], cwd=repo)
    assert mine.returncode == 0 and "signature good" in mine.stdout, mine.stdout + mine.stderr

    exported = tmp_path / "receipt.json"
    done = cli(home, "receipt", "export", rid, "--out", str(exported), cwd=repo)
    assert done.returncode == 0, done.stderr
    note = git(repo, "notes", "--ref=plugkit", "show", head)
    assert json.loads(note)["id"] == rid

    # A second machine: a fresh home with no runner and no key of its own, a clone of the repo.
    fresh = tmp_path / "elsewhere"
    fresh.mkdir()
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    away = {"PLUGKIT_HOME": str(fresh), "PLUGKIT_PORT": "9"}
    no_key = cli(home, "receipt", "verify", str(exported), cwd=clone, env=away)
    assert no_key.returncode == 2 and "--key" in no_key.stderr
    ok = cli(home, "receipt", "verify", str(exported), "--key", key, "--at", "HEAD", cwd=clone, env=away)
    assert ok.returncode == 0 and "signature good" in ok.stdout, ok.stdout + ok.stderr
    assert not (fresh / "receipts.ed25519").exists()

    # Another runner's key: the signature does not verify.
    other = cli(home, "key", "show", cwd=clone, env=away).stdout.strip()
    assert other != key
    wrong = cli(home, "receipt", "verify", str(exported), "--key", other, cwd=clone, env=away)
    assert wrong.returncode == 1 and "signature does not verify" in wrong.stdout


def test_a_receipt_edited_by_one_byte_or_of_another_tree_fails(agent, home, tmp_path):
    repo = agent.repo
    rid = agent.json("prd", "verify", "w1")["receipt"]
    key = cli(home, "key", "show", cwd=repo).stdout.strip()
    original = (repo / ".plugkit" / "evidence" / f"{rid}.json").read_bytes()

    # One byte: the exit code the receipt states, 0 -> 1.
    data = bytearray(original)
    at = original.index(b'"exit_code": 0')
    data[at + len('"exit_code": ')] = ord("1")
    edited = tmp_path / "edited.json"
    edited.write_bytes(bytes(data))
    failed = cli(home, "receipt", "verify", str(edited), "--key", key, cwd=repo)
    assert failed.returncode == 1 and "edited after it was signed" in failed.stdout

    # Edited to claim another tree, its id recomputed so it hashes to itself: the signature breaks.
    (repo / "more.txt").write_text("more\n")
    git(repo, "add", "more.txt")
    git(repo, "commit", "-q", "-m", "more")
    claim = evidence.Receipt.model_validate_json(original)
    claim.run.commit = git(repo, "rev-parse", "HEAD").strip()
    claim.run.tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    claim.head = claim.run.commit
    claim.id = evidence.body_id(claim)
    forged = tmp_path / "forged.json"
    forged.write_text(claim.model_dump_json())
    failed = cli(home, "receipt", "verify", str(forged), "--key", key, cwd=repo)
    assert failed.returncode == 1 and "signature does not verify" in failed.stdout

    # The honest receipt is of the first commit's tree: asked about HEAD's, it fails; about HEAD~1's, it holds.
    honest = tmp_path / "honest.json"
    honest.write_bytes(original)
    other_tree = cli(home, "receipt", "verify", str(honest), "--key", key, "--at", "HEAD", cwd=repo)
    assert other_tree.returncode == 1 and "not of HEAD's tree" in other_tree.stdout
    assert cli(home, "receipt", "verify", str(honest), "--key", key, "--at", "HEAD~1", cwd=repo).returncode == 0

    # The runner's own evidence verify reads the signature too.
    assert agent.json("evidence", "verify", rid)["ok"]
