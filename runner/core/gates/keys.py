"""The key the runner seals evidence receipts with: 32 random bytes, 0600 in $PLUGKIT_HOME.

Created once, on the gates' first use, and kept across restarts (a receipt written
yesterday must still verify). Only the runner reads it; nothing handed to a task names
the directory it is in (runner.system.tags scrubs PLUGKIT_HOME). A same-uid process
that knows the path can still read it: the README says what that means.
"""

import os
import secrets

KEY_FILE = "gates.key"
KEY_BYTES = 32


def load_key(home: str) -> bytes:
    path = os.path.join(home, KEY_FILE)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        pass
    else:
        # Written in one go right after an exclusive create: a reader never sees a short file
        # except after a crash mid-write, which the length check below turns into a new key.
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(KEY_BYTES))
            fh.flush()
            os.fsync(fh.fileno())
    if os.stat(path).st_mode & 0o077:
        os.chmod(path, 0o600)
    with open(path, "rb") as fh:
        key = fh.read()
    if len(key) != KEY_BYTES:
        os.replace(path, f"{path}.bad")
        return load_key(home)
    return key
