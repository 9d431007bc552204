"""The trust boundary of `plugkit work --runtime ray`: which cluster addresses plugkit sends
work to, and what of the supervisor's environment reaches a node.

A Ray cluster executes what it is sent, and its dashboard and job API have no authentication
by default (the "ShadowRay" attacks): plugkit talks to the GCS through the driver API only, and
refuses an address that is not loopback unless the connection is TLS (RAY_USE_TLS=1 with its
certificates, as Ray reads them) or a person passed --allow-remote-cluster. Standard library and plugkit.vocab only.
"""

from __future__ import annotations

import ipaddress
from typing import Mapping, Optional

from plugkit.vocab import HOME_TAG, TAG_NAMES

RUNTIMES: tuple[str, ...] = ("local", "ray")
TLS_VAR = "RAY_USE_TLS"
# Never shipped to a node: how to reach (and drive) the supervisor's runner.
NEVER_TRAVELS = frozenset({HOME_TAG, "PLUGKIT_PORT", "PLUGKIT_TOKEN"}) | TAG_NAMES
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
    if is_loopback(host) or allow_remote or env.get(TLS_VAR, "").lower() in ("1", "true"):
        return None
    return (f"refusing the Ray cluster at {address}: it is not on this machine and the connection is not TLS. "
            "A Ray cluster runs what it is sent, unauthenticated: set RAY_USE_TLS=1 with its certificates, or "
            "pass --allow-remote-cluster once you have made the cluster private (README: plugkit work on Ray)")


def driver_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of the driver process: the runner's, less how to reach it (the driver
    never calls the runner; the worker's own environment travels in the spec, scoped)."""
    return {k: v for k, v in env.items() if k not in NEVER_TRAVELS}
