"""The runner's Ed25519 key and the signatures on receipts: made and checked here, shared by the
runner (which signs) and the client (which checks anywhere, offline, with the public key only).

The private key is 32 raw bytes, 0600 in $PLUGKIT_HOME (`receipts.ed25519`); nothing handed to a
task names that directory (runner.system.tags scrubs PLUGKIT_HOME, the sandbox hides the home).
The public key is written next to it (`receipts.ed25519.pub`) as `ed25519:<base64>`, the form
`plugkit key show` prints and `plugkit receipt verify --key` takes.

A signature covers a domain tag, the receipt's id and its canonical body (every field but id,
mac and sig), so editing any byte of a signed fact, or claiming another tree, breaks it.
"""

import base64
import os
from typing import Optional

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

KEY_FILE = "receipts.ed25519"
PUB_FILE = KEY_FILE + ".pub"
PREFIX = "ed25519:"
DOMAIN = b"plugkit-receipt-v1\n"  # a signature over a receipt never doubles as one over anything else


def load_private(home: str) -> Ed25519PrivateKey:
    """The runner's signing key, made on first use (exclusive create: two starts agree on one)."""
    path = os.path.join(home, KEY_FILE)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "wb") as fh:
            fh.write(Ed25519PrivateKey.generate().private_bytes_raw())
            fh.flush()
            os.fsync(fh.fileno())
    if os.stat(path).st_mode & 0o077:
        os.chmod(path, 0o600)
    with open(path, "rb") as fh:
        raw = fh.read()
    if len(raw) != 32:  # a crash mid-write: set the torn file aside, make a new key
        os.replace(path, f"{path}.bad")
        return load_private(home)
    key = Ed25519PrivateKey.from_private_bytes(raw)
    _write_public(home, public_text(key.public_key()))
    return key


def _write_public(home: str, text: str) -> None:
    path = os.path.join(home, PUB_FILE)
    try:
        with open(path, encoding="ascii") as fh:
            if fh.read().strip() == text:
                return
    except (OSError, UnicodeDecodeError):
        pass
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="ascii") as fh:
        fh.write(text + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def public_text(key: Ed25519PublicKey) -> str:
    return PREFIX + base64.b64encode(key.public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()


def parse_public(text: str) -> Ed25519PublicKey:
    """`ed25519:<base64>` (or the bare base64, or 64 hex digits); ValueError when it is none."""
    text = text.strip()
    body = text[len(PREFIX):] if text.startswith(PREFIX) else text
    try:
        raw = bytes.fromhex(body) if len(body) == 64 else base64.b64decode(body, validate=True)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise ValueError(f"{text[:60]!r} is not an Ed25519 public key ({PREFIX}<base64 of 32 bytes>)")
    return Ed25519PublicKey.from_public_bytes(raw)


def read_public(home: str) -> Optional[str]:
    try:
        with open(os.path.join(home, PUB_FILE), encoding="ascii") as fh:
            return fh.read().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def sign(key: Ed25519PrivateKey, message: bytes) -> str:
    return base64.b64encode(key.sign(DOMAIN + message)).decode()


def signed_by(key: Ed25519PublicKey, message: bytes, sig: str) -> bool:
    try:
        key.verify(base64.b64decode(sig, validate=True), DOMAIN + message)
    except (InvalidSignature, ValueError):
        return False
    return True
