"""The trust boundary of `plugkit work --runtime ray`: which cluster addresses plugkit sends
work to, and what of the supervisor's environment reaches a node.

A Ray cluster executes what it is sent, for anyone who reaches its GCS or a raylet, unless it
runs Ray's token authentication (RAY_AUTH_MODE=token): a loopback address is no door shut, since
every local user reaches loopback. So plugkit sends work only to a cluster that refuses a caller
without the token (runner/node/auth.py asks it), or one reached over TLS with
client certificates (RAY_USE_TLS=1); the token lives in a 0600 file plugkit makes. Beside it, the
node key: a secret only the supervising user's nodes hold, with which a node answers the
driver's challenge before it gets an item (runner/node/driver.py). An address that is not loopback is
still refused unless TLS or a person's --allow-remote-cluster. Standard library and plugkit.vocab only.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from typing import Mapping, Optional

from plugkit.vocab import HOME_TAG, TAG_NAMES, WORK_RUNTIMES

RUNTIMES: tuple[str, ...] = WORK_RUNTIMES
TLS_VAR = "RAY_USE_TLS"
# Never shipped to a node: how to reach (and drive) the supervisor's runner.
AUTH_MODE_VAR, TOKEN_PATH_VAR, TOKEN_VAR = "RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_TOKEN"  # Ray's names
LOOPBACK_VAR = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray keeps 127.0.0.1 as the node's address
NODE_KEY_VAR = "PLUGKIT_NODE_KEY"  # the node key's file, on the supervisor and on `ray start` of its nodes
# What a gateway (runner/node/gateway.py) prints once its cluster turned away a caller without the
# token: while it lives, a run on that cluster needs no check of its own (its connection dies with the GCS).
GATEWAY_CHECKED = "plugkit ray gateway: the cluster demands its token"
# Never shipped to a node: how to reach (and drive) the supervisor's runner, and the cluster's secrets.
NEVER_TRAVELS = frozenset({HOME_TAG, "PLUGKIT_PORT", "PLUGKIT_TOKEN", TOKEN_PATH_VAR, TOKEN_VAR,
                           NODE_KEY_VAR}) | TAG_NAMES
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def host_of(address: str) -> Optional[str]:
    """The host of a GCS address `host:port` (`[v6]:port`), or None when it is not one."""
    if "://" in address:  # ray:// is the Ray Client, another API with its own server: not used
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return None
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refusal(address: Optional[str], env: Mapping[str, str], allow_remote: bool) -> Optional[str]:
    """Why plugkit will not send work to this cluster, or None when it will."""
    if not address:
        return "--runtime ray needs --cluster HOST:PORT (or work_cluster in .plugkit/config.toml)"
    host = host_of(address)
    if host is None:
        return f"--cluster {address!r} is not HOST:PORT (the cluster's GCS address, as `ray start --head` prints)"
    if is_loopback(host) or allow_remote or uses_tls(env):
        return None
    return (f"refusing the Ray cluster at {address}: it is not on this machine and the connection is not TLS. "
            "A Ray cluster runs what it is sent, unauthenticated: set RAY_USE_TLS=1 with its certificates, or "
            "pass --allow-remote-cluster once you have made the cluster private (README: plugkit work on Ray)")


def uses_tls(env: Mapping[str, str]) -> bool:
    return env.get(TLS_VAR, "").lower() in ("1", "true")


def secret_paths(env: Mapping[str, str], home: str) -> tuple[str, str]:
    """(the cluster's token file, the node key's file): Ray's RAY_AUTH_TOKEN_PATH and
    PLUGKIT_NODE_KEY when set, else the ones plugkit makes under the runner's home."""
    base = os.path.join(home, "ray")
    return env.get(TOKEN_PATH_VAR) or os.path.join(base, "auth_token"), \
        env.get(NODE_KEY_VAR) or os.path.join(base, "node_key")


def make_secret(path: str) -> bool:
    """A new random secret in a 0600 file (its directory 0700) unless one is there: made or not.
    `ray get-auth-token --generate` writes ~/.ray/auth_token with the umask's mode (0644)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as fh:
        fh.write(secrets.token_hex(32))
    return True


def secret_problem(path: str, what: str) -> Optional[str]:
    """Why this secret file cannot be trusted as ours (missing, another's, readable by others), or None."""
    try:
        st = os.stat(path)
    except OSError:
        return f"no {what} at {path}: `plugkit work ray-secrets` makes it"
    if st.st_uid != os.geteuid():
        return f"the {what} at {path} belongs to another user"
    if st.st_mode & 0o077:
        return f"the {what} at {path} is readable by others (mode {st.st_mode & 0o777:o}): chmod 600 it"
    return None


def read_secret(path: str) -> Optional[str]:
    if secret_problem(path, "secret") is not None:
        return None
    with open(path) as fh:
        return fh.read().strip() or None


def driver_env(env: Mapping[str, str], home: str) -> dict[str, str]:
    """The environment of the driver process: the runner's, less how to reach it (the driver
    never calls the runner; the worker's own environment travels in the spec, scoped), plus
    Ray's token authentication: the token's file and where the node key is."""
    out = {k: v for k, v in env.items() if k not in NEVER_TRAVELS}
    token, key = secret_paths(env, home)
    out[NODE_KEY_VAR] = key
    if env.get(TOKEN_VAR):
        out[TOKEN_VAR] = env[TOKEN_VAR]
    else:
        out[TOKEN_PATH_VAR] = token
    if not uses_tls(env) or env.get(TOKEN_VAR) or os.path.exists(token):
        out[AUTH_MODE_VAR] = "token"
    return out
