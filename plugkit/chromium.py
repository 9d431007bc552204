"""Which Chromium plugkit uses and whether its sandbox can work here: one rule for the runner
(which launches it) and `plugkit doctor` (which reports on it). Standard library only.

The sandbox decision is a probe, not a guess: Chromium's Linux sandbox needs either
unprivileged user + PID + network namespaces (what it tries first) or a setuid-root
`chrome-sandbox` helper. We try the namespaces in a throwaway child exactly as Chromium's
zygote does (unshare, then map our uid), so a kernel that forbids them (sysctl, AppArmor's
userns restriction, a container's seccomp profile) answers for itself. Root is the one case
decided without a probe: Chromium refuses to start its sandbox as root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

ENV = "PLUGKIT_CHROMIUM"
# Looked up on PATH in this order when PLUGKIT_CHROMIUM is not set.
NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FALLBACK = "/usr/bin/chromium"  # the runner may have a thin PATH (started by a hook)
INSTALL_HINT = f"install it with `apt-get install -y chromium`, or set {ENV} to a Chromium/Chrome binary"

# Where a setuid sandbox helper lives: $CHROME_DEVEL_SANDBOX, or next to the real binary
# (/usr/bin/chromium is often a shell script in front of /usr/lib/chromium/chromium).
_HELPER_DIRS = ("/usr/lib/chromium", "/opt/google/chrome", "/usr/lib/chromium-browser")
_HELPER_NAME = "chrome-sandbox"

# The probe, run as `python -I -S -c`: the namespaces Chromium's zygote asks for, then the uid
# map it writes. AppArmor's restriction (Ubuntu 24.04) lets unshare succeed but leaves the new
# namespace without capabilities, so only the map write tells.
_PROBE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
uid, gid = os.getuid(), os.getgid()
if libc.unshare(0x10000000 | 0x20000000 | 0x40000000) != 0:  # CLONE_NEWUSER|NEWPID|NEWNET
    print("unshare(CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNET): " + os.strerror(ctypes.get_errno()))
    sys.exit(1)
try:
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open("/proc/self/" + name, "w") as fh:
            fh.write(text)
except OSError as exc:
    print(f"writing /proc/self/{name} in the new user namespace: {exc.strerror}")
    sys.exit(1)
"""
# Kernel settings that explain a refusal, shown with it.
_SYSCTLS = ("kernel/unprivileged_userns_clone", "user/max_user_namespaces",
            "kernel/apparmor_restrict_unprivileged_userns")


class ChromiumNotFound(Exception):
    """The message is written for the agent or the user."""


def find_chromium(environ: Mapping[str, str] = os.environ) -> str:
    """$PLUGKIT_CHROMIUM if set (and then only it), else the first of NAMES on $PATH, else
    FALLBACK. Returns an executable path or raises ChromiumNotFound."""
    wanted = environ.get(ENV)
    if wanted:
        found = shutil.which(wanted, path=environ.get("PATH")) if os.sep not in wanted else wanted
        if found and os.path.isfile(found) and os.access(found, os.X_OK):
            return found
        raise ChromiumNotFound(f"Chromium not found at {ENV}={wanted}; {INSTALL_HINT}")
    for name in NAMES:
        found = shutil.which(name, path=environ.get("PATH"))
        if found:
            return found
    if os.access(FALLBACK, os.X_OK):
        return FALLBACK
    raise ChromiumNotFound(f"Chromium not found (looked for {', '.join(NAMES)} on PATH and {FALLBACK}); "
                           f"{INSTALL_HINT}")


@dataclass(frozen=True)
class Sandbox:
    on: bool
    why: str  # one line: how it works, or why it cannot

    def as_dict(self) -> dict:
        return {"on": self.on, "why": self.why}


def sandbox_for(executable: str, euid: Optional[int] = None, probe: Optional[Callable[[], Optional[str]]] = None) -> Sandbox:
    """Whether Chromium at `executable` can run sandboxed by this user on this kernel."""
    euid = os.geteuid() if euid is None else euid
    if euid == 0:
        return Sandbox(False, "running as root: Chromium cannot sandbox itself as root, so it runs with "
                              "--no-sandbox; run plugkit as an ordinary user to keep pages sandboxed")
    refused = (probe or probe_user_namespaces)()
    if refused is None:
        return Sandbox(True, "user namespaces (Chromium's namespace sandbox)")
    helper = setuid_helper(executable)
    if helper:
        return Sandbox(True, f"setuid helper {helper} (user namespaces refused: {refused})")
    return Sandbox(False, f"the kernel refuses the sandbox ({refused}{_settings()}) and there is no "
                          f"setuid {_HELPER_NAME}; pages run with --no-sandbox. To fix: "
                          "sysctl -w kernel.unprivileged_userns_clone=1 (or allow user namespaces "
                          "for Chromium in AppArmor)")


def probe_user_namespaces(timeout: float = 10.0) -> Optional[str]:
    """None when an unprivileged child can make the namespaces Chromium needs, else why not."""
    try:
        run = subprocess.run([sys.executable, "-I", "-S", "-c", _PROBE], capture_output=True, text=True,
                             timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the probe could not run: {exc}"
    if run.returncode == 0:
        return None
    return (run.stdout.strip() or run.stderr.strip() or f"probe exit code {run.returncode}").splitlines()[-1]


def setuid_helper(executable: str) -> Optional[str]:
    candidates = [os.environ.get("CHROME_DEVEL_SANDBOX", "")]
    candidates.append(os.path.join(os.path.dirname(os.path.realpath(executable)), _HELPER_NAME))
    candidates.extend(os.path.join(d, _HELPER_NAME) for d in _HELPER_DIRS)
    for path in filter(None, candidates):
        try:
            st = os.stat(path)
        except OSError:
            continue
        if st.st_uid == 0 and st.st_mode & 0o4000 and os.access(path, os.X_OK):
            return path
    return None


def _settings() -> str:
    found = []
    for name in _SYSCTLS:
        try:
            with open(f"/proc/sys/{name}") as fh:
                found.append(f"{name.replace('/', '.')}={fh.read().strip()}")
        except OSError:
            continue
    return f"; {', '.join(found)}" if found else ""
