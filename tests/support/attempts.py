"""What the sandbox tests share: a credential for a worker's or task's $HOME to hold, and the
prelude of the small Python probes they run inside the sandbox (one `ATTACK <name>
<denied|ALLOWED>` line per attempt)."""

from pathlib import Path

FAKE_KEY = "-----BEGIN FAKE KEY-----\n"

PRELUDE = """
import os
def attempt(name, act):
    try:
        act()
        print("ATTACK", name, "ALLOWED")
    except OSError:
        print("ATTACK", name, "denied")
"""


def home_with_a_key(path: Path) -> Path:
    """A $HOME holding ~/.ssh/id_rsa, which the sandbox must hide."""
    (path / ".ssh").mkdir(parents=True)
    (path / ".ssh" / "id_rsa").write_text(FAKE_KEY)
    return path
