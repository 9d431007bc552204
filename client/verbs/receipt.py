"""`plugkit receipt verify|export` and `plugkit key show`: signed receipts checked and carried
anywhere, with no runner (the public key is all `verify` needs)."""

import argparse
import os
import subprocess
import sys
from typing import Optional

from plugkit import paths
from plugkit.lifecycle import evidence, receipt_check, signing
from plugkit.lifecycle.errors import GateError
from plugkit.lifecycle.workspace import Workspace
from plugkit.workspace import NotAWorkspace, find_root

NOTES_REF = "refs/notes/plugkit"


def _fail(message: str, code: int = 1) -> int:
    print(f"plugkit: {message}", file=sys.stderr)
    return code


def _load(ref: str) -> tuple[Optional[bytes], str]:
    """A receipt's bytes: FILE, else an id (or prefix) in this workspace's .plugkit/evidence/."""
    if os.path.isfile(ref):
        with open(ref, "rb") as fh:
            return fh.read(), ""
    try:
        ws = Workspace(find_root(os.path.realpath(os.getcwd())))
        found = evidence.find(ws, ref)
    except (NotAWorkspace, GateError) as exc:
        return None, f"{ref}: no such file, and {exc}"
    return found.model_dump_json(indent=1).encode(), ""


def _key(text: Optional[str]) -> tuple[Optional[signing.Ed25519PublicKey], str]:
    if text is None:
        text = signing.read_public(paths.home())
        if text is None:
            return None, ("no public key to check with: pass --key (what `plugkit key show` prints "
                          "on the runner's machine)")
    elif os.path.isfile(text):
        with open(text, encoding="ascii", errors="replace") as fh:
            text = fh.read()
    try:
        return signing.parse_public(text), ""
    except ValueError as exc:
        return None, f"--key: {exc}"


def receipt_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="plugkit receipt", description="Signed receipts, checked or carried anywhere.")
    sub = p.add_subparsers(dest="action", required=True)
    ver = sub.add_parser("verify", help="check a receipt's signature offline, with only the public key")
    ver.add_argument("receipt", metavar="FILE|ID")
    ver.add_argument("--key", metavar="PUBKEY", help="ed25519:<base64> or a file holding it "
                     "(default: this home's, $PLUGKIT_HOME/receipts.ed25519.pub)")
    ver.add_argument("--at", metavar="REV", help="and require it to be of REV's tree (a CI job: --at HEAD)")
    exp = sub.add_parser("export", help="write a receipt as JSON and as a git note on its commit")
    exp.add_argument("receipt", metavar="ID")
    exp.add_argument("--out", metavar="FILE", help="where the JSON goes (default: stdout)")
    a = p.parse_args(argv)
    data, why = _load(a.receipt)
    if data is None:
        return _fail(why)
    try:
        receipt = receipt_check.parse(data)
    except ValueError as exc:
        return _fail(f"{a.receipt}: {exc}")
    repo = os.getcwd() if receipt_check.tree_of(os.getcwd(), "HEAD") is not None else None
    if a.action == "verify":
        key, why = _key(a.key)
        if key is None:
            return _fail(why, 2)
        problems = receipt_check.problems(receipt, key, repo, a.at)
        for line in receipt_check.summary(receipt):
            print(line)
        if problems:
            for problem in problems:
                print(f"  FAILS: {problem}")
            return 1
        print(f"  signature good ({signing.public_text(key)})")
        return 0
    return _export(receipt, data, a.out, repo)


def _export(receipt: evidence.Receipt, data: bytes, out: Optional[str], repo: Optional[str]) -> int:
    if out:
        with open(out, "wb") as fh:
            fh.write(data)
    else:
        sys.stdout.write(data.decode() + "\n")
    commit = receipt.run.commit if receipt.run is not None else receipt.head
    if not commit:
        return _fail(f"receipt {receipt.id} names no commit, so no git note was written")
    if repo is None:
        return _fail("not in a git repository, so no git note was written")
    done = subprocess.run(["git", "-C", repo, "notes", f"--ref={NOTES_REF}", "add", "-f", "-F", "-", commit],
                          input=data, capture_output=True)
    if done.returncode != 0:
        return _fail(f"git notes failed: {done.stderr.decode(errors='replace').strip()[:300]}")
    print(f"noted on {commit[:12]} ({NOTES_REF}): `git notes --ref=plugkit show {commit[:12]}`", file=sys.stderr)
    return 0


def key_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="plugkit key", description="The runner's receipt-signing key.")
    sub = p.add_subparsers(dest="action", required=True)
    sub.add_parser("show", help="print the public key to publish (ed25519:<base64>)")
    p.parse_args(argv)
    home = paths.ensure_home()
    text = signing.read_public(home)
    if text is None:  # made here as the runner makes it on first use (exclusive create: both agree)
        text = signing.public_text(signing.load_private(home).public_key())
    print(text)
    return 0
