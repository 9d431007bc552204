"""Evidence receipts: content-addressed JSON under `.plugkit/evidence/`, sealed by the runner.

A receipt names its artifact by sha256: a task's witnessed output (a copy kept under
`evidence/blobs/<sha256>`, written by the runner, never by the agent) or a file of the
workspace (hashed where it is). The receipt's id is the hash of its own canonical
JSON, so editing a receipt breaks its id, editing a blob breaks its hash, and editing a
file named by a receipt shows as "changed since". `verify` re-hashes all three.

Content addressing alone proves nothing about who wrote a receipt: anyone can write a
blob and a JSON whose id is its own hash. So the runner seals each receipt with an
HMAC-SHA256 under a key only it reads (`ws.seal`, 0600 in $PLUGKIT_HOME), over the whole
body: task id, both sessions, workspace, code hash, exit code, output hash. A receipt
without a valid seal fails `verify`. (The pure model, without a key, skips that check.)

The seal proves the receipt to this runner only. Each receipt is also signed with the
runner's Ed25519 key (plugkit.lifecycle.signing, `sig`) over the same body, which carries
the run's facts (`run`: commit and tree checked, command, environment, exit code, output
digest, duration): anyone holding the public key checks it offline (`plugkit receipt
verify`). Both are kept: the seal still refuses a receipt from another runner's home here,
and receipts written before signatures (no `sig`) stay readable under their seal alone.
"""

import hashlib
import hmac
import json
import os
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, ValidationError

from plugkit import confined
from plugkit.lifecycle import signing
from plugkit.lifecycle.errors import Invalid, NotFound
from plugkit.lifecycle.workspace import Workspace, atomic_write

ID_CHARS = 20  # 80 bits of the body hash: unique within a workspace, short enough to type
MIN_PREFIX = 6
Kind = Literal["task_output", "verify", "file"]


class TaskWitness(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: int
    session_id: str  # the session the task ran in
    by_session: Optional[str] = None  # the session that named it as a witness, when another one
    lang: str
    code_sha256: Optional[str]  # None only when the runner keeps no ledger (unit tests)
    state: str
    exit_code: Optional[int]
    truncated: bool


class RunFacts(BaseModel):
    """What the check ran on and in, as the runner saw it (None fields: not known)."""

    model_config = ConfigDict(extra="forbid")

    commit: Optional[str] = None  # the receipt's head, when the run checked that commit for sure
    tree: Optional[str] = None  # that commit's tree
    command: Optional[str] = None  # the check's text, when the caller named it
    lang: str = ""
    env: dict[str, str] = {}  # interpreter and tool versions where known
    env_vars: list[str] = []  # the variables that matter, by name, whose values env_digest hashes
    env_digest: str = ""
    exit_code: Optional[int] = None
    output_sha256: str = ""
    duration_s: Optional[float] = None


class Receipt(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = ""
    kind: Kind
    created_at: float
    sha256: str  # of the artifact
    size: int
    path: Optional[str] = None  # file artifacts: relative to the workspace root
    task: Optional[TaskWitness] = None
    subject: str = ""  # what it witnesses: "mutable:NAME", "verify", an item id, ...
    note: str = ""
    workspace: str = ""  # the root it was made for: a receipt copied elsewhere does not verify
    # The git HEAD its task ran at, when the runner started that task as a check and HEAD had
    # not moved by its end (prd.verify, gate verify, plugkit work); None: not known.
    head: Optional[str] = None
    run: Optional[RunFacts] = None  # None: a receipt made before run facts, or of a file
    mac: str = ""  # the runner's seal over id + body (hex HMAC-SHA256)
    sig: str = ""  # the runner's Ed25519 signature over id + body (base64); "" before signatures


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str, root: str) -> str:
    """The hash of a workspace file at root, read without a link and only if regular (a worker
    links what it cannot read, or plants a FIFO that would hold the read): OSError otherwise."""
    return file_digest(path, root)[0]


def file_digest(path: str, root: str) -> tuple[str, int]:
    """(sha256, size) of the file, read as sha256_file reads it."""
    h, size = hashlib.sha256(), 0
    with confined.open_beneath(root, path) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
            size += len(block)
    return h.hexdigest(), size


def _canonical(receipt: Receipt) -> bytes:
    body = receipt.model_dump(mode="json", exclude={"id", "mac", "sig"})
    for late in ("head", "run"):  # receipts written before these existed keep their ids and seals
        if body[late] is None:
            del body[late]
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def body_id(receipt: Receipt) -> str:
    return sha256_bytes(_canonical(receipt))[:ID_CHARS]


def seal_of(key: bytes, receipt: Receipt) -> str:
    return hmac.new(key, receipt.id.encode() + b"\n" + _canonical(receipt), hashlib.sha256).hexdigest()


def signed_message(receipt: Receipt) -> bytes:
    return receipt.id.encode() + b"\n" + _canonical(receipt)


def signature_ok(public_key: "signing.Ed25519PublicKey", receipt: Receipt) -> bool:
    return bool(receipt.sig) and signing.signed_by(public_key, signed_message(receipt), receipt.sig)


def sealed(key: Optional[bytes], receipt: Receipt) -> bool:
    return key is None or (bool(receipt.mac) and hmac.compare_digest(receipt.mac, seal_of(key, receipt)))


def _blob_dir(ws: Workspace) -> str:
    return os.path.join(ws.evidence_dir, "blobs")


def _store(ws: Workspace, receipt: Receipt) -> Receipt:
    receipt.workspace = ws.root
    receipt.id = body_id(receipt)
    if ws.seal is not None:
        receipt.mac = seal_of(ws.seal, receipt)
    if ws.signer is not None:
        receipt.sig = signing.sign(ws.signer, signed_message(receipt))
    if ws.ledger is not None:  # listed in the runner's ledger: verifiable after its task ages out
        ws.ledger.add_receipt(ws.root, receipt.id, receipt.task.task_id if receipt.task else None,
                              receipt.created_at)
    os.makedirs(ws.evidence_dir, exist_ok=True)
    atomic_write(os.path.join(ws.evidence_dir, receipt.id + ".json"),
                 receipt.model_dump_json(indent=1).encode())
    return receipt


def record_output(ws: Workspace, kind: Kind, output: bytes, task: TaskWitness, subject: str,
                  note: str, now: float, head: Optional[str] = None, run: Optional[RunFacts] = None) -> Receipt:
    """Call with the workspace lock held. The blob is content-addressed: the same output
    twice is stored once."""
    digest = sha256_bytes(output)
    if run is not None:
        run = run.model_copy(update={"output_sha256": digest})
        if head is None or run.commit != head:  # bind only a commit (and tree) the run checked for sure
            run.commit = run.tree = None
    os.makedirs(_blob_dir(ws), exist_ok=True)
    blob = os.path.join(_blob_dir(ws), digest)
    if not os.path.exists(blob) or _digest_or_none(blob, ws.root) != digest:
        atomic_write(blob, output)
    return _store(ws, Receipt(kind=kind, created_at=now, sha256=digest, size=len(output),
                              task=task, subject=subject, note=note, head=head, run=run))


def record_file(ws: Workspace, path: str, subject: str, note: str, now: float) -> Receipt:
    rel = ws.inside(path)
    try:
        digest, size = file_digest(rel, ws.root)
    except OSError:
        raise Invalid(f"{rel} is not a file in the workspace") from None
    return _store(ws, Receipt(kind="file", created_at=now, sha256=digest, size=size, path=rel,
                              subject=subject, note=note))


def _digest_or_none(path: str, root: str) -> Optional[str]:
    try:
        return sha256_file(path, root)
    except OSError:
        return None


def _read(root: str, path: str) -> Optional[Receipt]:
    try:
        with confined.open_beneath(root, path) as fh:
            return Receipt.model_validate_json(fh.read())
    except (OSError, ValidationError, ValueError):
        return None


def list_receipts(ws: Workspace) -> list[Receipt]:
    try:
        names = [n for n in os.listdir(ws.evidence_dir) if n.endswith(".json")]
    except FileNotFoundError:
        return []
    found = [r for n in names if (r := _read(ws.root, os.path.join(ws.evidence_dir, n))) is not None]
    return sorted(found, key=lambda r: (r.created_at, r.id))


def find(ws: Workspace, ref: str) -> Receipt:
    """By id or unique prefix (at least MIN_PREFIX characters), as git names commits."""
    ref = ref.strip().lower()
    if len(ref) < MIN_PREFIX or not all(c in "0123456789abcdef" for c in ref):
        raise Invalid(f"receipt id {ref!r}: give at least {MIN_PREFIX} hex characters of it")
    exact = os.path.join(ws.evidence_dir, ref + ".json")
    if len(ref) == ID_CHARS and os.path.exists(exact):
        receipt = _read(ws.root, exact)
        if receipt is not None:
            return receipt
    try:
        names = [n[:-5] for n in os.listdir(ws.evidence_dir) if n.endswith(".json") and n.startswith(ref)]
    except FileNotFoundError:
        names = []
    if len(names) > 1:
        raise Invalid(f"receipt prefix {ref} is ambiguous ({', '.join(sorted(names)[:5])}); give more of it")
    receipt = _read(ws.root, os.path.join(ws.evidence_dir, names[0] + ".json")) if names else None
    if receipt is None:
        raise NotFound(f"no evidence receipt {ref} in this workspace; `plugkit evidence list` shows them")
    return receipt


def verify(ws: Workspace, receipt: Receipt, file_name: Optional[str] = None) -> list[str]:
    """Every mismatch found, as sentences; empty when the receipt still holds."""
    problems = []
    if body_id(receipt) != receipt.id or (file_name is not None and file_name != receipt.id):
        problems.append("the receipt was edited after it was written (its content no longer hashes to its id)")
    elif not sealed(ws.seal, receipt):
        problems.append("the receipt carries no valid seal of this runner: it was not written by plugkit "
                        "(forged, or from another runner's home)")
    elif ws.signer is not None and receipt.sig and not signature_ok(ws.signer.public_key(), receipt):
        problems.append("the receipt's signature does not verify with this runner's public key")
    if ws.seal is not None and receipt.workspace != ws.root:
        problems.append(f"the receipt was made for another workspace ({receipt.workspace or 'none named'})")
    if receipt.kind == "file":
        full = os.path.join(ws.root, receipt.path or "")
        try:
            now = sha256_file(full, ws.root)
        except OSError:
            return problems + [f"{receipt.path} is gone"]
        if now != receipt.sha256:
            problems.append(f"{receipt.path} changed since it was recorded")
    else:
        blob = os.path.join(_blob_dir(ws), receipt.sha256)
        try:
            now = sha256_file(blob, ws.root)
        except OSError:
            return problems + ["the witnessed output copy is missing"]
        if now != receipt.sha256:
            problems.append("the witnessed output copy was altered")
    return problems


def verify_all(ws: Workspace, refs: list[str]) -> list[tuple[str, Optional[Receipt], list[str]]]:
    """(id, receipt, problems) per receipt: the named ones, or every file in evidence/ (even
    unreadable: receipt None)."""
    if refs:
        return [(r.id, r, verify(ws, r, r.id)) for r in (find(ws, ref) for ref in refs)]
    try:
        names = sorted(n[:-5] for n in os.listdir(ws.evidence_dir) if n.endswith(".json"))
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        receipt = _read(ws.root, os.path.join(ws.evidence_dir, name + ".json"))
        out.append((name, receipt, ["the receipt is not valid JSON of a receipt"] if receipt is None
                    else verify(ws, receipt, name)))
    return out
