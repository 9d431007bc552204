"""A receipt checked anywhere, offline, with only the runner's public key: what `plugkit receipt
verify` runs (no runner, no $PLUGKIT_HOME needed). Git is asked only to compare trees."""

import subprocess
from typing import Optional

from pydantic import ValidationError

from plugkit.lifecycle import signing
from plugkit.lifecycle.evidence import Receipt, body_id, signature_ok


def parse(data: bytes) -> Receipt:
    """ValueError with a sentence when the bytes are no receipt."""
    try:
        return Receipt.model_validate_json(data)
    except (ValidationError, ValueError):
        raise ValueError("not a plugkit receipt (JSON of a receipt, as `plugkit receipt export` writes)") from None


def problems(receipt: Receipt, public_key: "signing.Ed25519PublicKey", repo: Optional[str] = None,
             at: Optional[str] = None) -> list[str]:
    """Every reason the receipt does not hold, as sentences; empty when it does. `repo`: a git
    directory to check the named commit's tree in; `at`: a revision whose tree it must be of."""
    found = []
    if body_id(receipt) != receipt.id:
        found.append("the receipt was edited after it was signed (its content no longer hashes to its id)")
    elif not receipt.sig:
        found.append("the receipt carries no signature (written before plugkit signed receipts)")
    elif not signature_ok(public_key, receipt):
        found.append("the signature does not verify with this public key (edited, forged, or another runner's)")
    run = receipt.run
    tree = run.tree if run is not None else None
    if repo is not None and run is not None and run.commit and tree:
        actual = tree_of(repo, run.commit)
        if actual is not None and actual != tree:
            found.append(f"commit {run.commit[:12]} has tree {actual[:12]} here, not the {tree[:12]} the receipt names")
    if at is not None:
        want = tree_of(repo or ".", at)
        if want is None:
            found.append(f"{at} names no commit in this repository")
        elif tree is None:
            found.append("the receipt names no tree (its run did not check one commit for sure)")
        elif want != tree:
            found.append(f"the receipt is of tree {tree[:12]}, not of {at}'s tree {want[:12]}")
    return found


def tree_of(repo: str, rev: str) -> Optional[str]:
    if rev.startswith("-"):
        return None
    try:
        done = subprocess.run(["git", "-C", repo, "rev-parse", "--verify", "-q", f"{rev}^{{tree}}"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def summary(receipt: Receipt) -> list[str]:
    run = receipt.run
    lines = [f"receipt {receipt.id} ({receipt.kind}, {receipt.subject or 'no subject'})"]
    if run is None:
        return lines + ["  no run facts (a file, or a receipt written before them)"]
    lines.append(f"  commit {run.commit or '-'}  tree {run.tree or '-'}")
    lines.append(f"  command {run.command!r}" if run.command is not None else "  command not named")
    lines.append(f"  exit {run.exit_code}  output sha256 {run.output_sha256[:16]}  "
                 f"{'%.3f s' % run.duration_s if run.duration_s is not None else ''}".rstrip())
    return lines
