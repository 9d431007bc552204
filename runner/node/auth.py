"""Who may give and take plugkit's work on a Ray cluster: whether the cluster demands Ray's
token, and whether a node is one of the supervising user's own (it answers a challenge with the
node key).

    python -m runner.node.auth HOST:PORT

asks the cluster's GCS without a token, in a process of its own (Ray reads its auth mode once
per process): exit 0 when the GCS refused it (token authentication on), 2 when it answered
(anyone on the network, or any local user, can run code there), 1 when it could not be reached.

Why a node key beside the token: the token lets a node join; a node that joined is given work
by Ray as any other. Another user holding the token (a shared cluster) can join a node of its
own and would be handed our items: our repository, our credentials' scope, commits that land
on our branch. Only a node holding the key (a 0600 file of the supervising user) answers the
challenge, bound to its Ray node id, so an answer cannot be replayed for another node.
"""

import hashlib
import hmac
import os
import socket
import subprocess
import sys
from typing import Mapping, Optional

from plugkit.work import cluster

CHECK_TIMEOUT_S = 90.0
OPEN_RC, UNREACHABLE_RC = 2, 1


def token_refusal(address: str, env: Mapping[str, str]) -> Optional[str]:
    """Why plugkit will not use this cluster for want of authentication, or None: it is reached
    over TLS (RAY_USE_TLS, client certificates as Ray requires them) or its GCS turns away a
    caller without the token."""
    if cluster.uses_tls(env):
        return None
    try:
        done = subprocess.run([sys.executable, "-P", "-m", __name__, address], env=_stranger(env), capture_output=True,
                              text=True, timeout=CHECK_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"the Ray cluster at {address} did not answer within {CHECK_TIMEOUT_S:.0f} s"
    return _refusal(address, done.returncode, done.stdout.strip() or done.stderr.strip())


def _stranger(env: Mapping[str, str]) -> dict[str, str]:
    """`env` as a stranger's: no token sent."""
    probe_env = {k: v for k, v in env.items() if not k.startswith("RAY_AUTH")}
    probe_env[cluster.AUTH_MODE_VAR] = "disabled"
    return probe_env


def _refusal(address: str, rc: int, said: str) -> Optional[str]:
    """token_refusal's answer from the probe's exit code and what it said."""
    if rc == 0:
        return None
    if rc == OPEN_RC:
        return (f"refusing the Ray cluster at {address}: it runs without token authentication, so any local "
                "user (or anyone who reaches its ports) can run code as its nodes' users. Start it with "
                "RAY_AUTH_MODE=token and the token from `plugkit work ray-secrets` (README: plugkit work on Ray)")
    return f"cannot reach the Ray cluster at {address}: {(said.splitlines() or ['no answer'])[-1][:300]}"


def keep_loopback(address: str) -> None:
    """Before Ray is imported: when the cluster's head listens on loopback only (the README's
    one-machine cluster), make Ray keep 127.0.0.1 as this driver's address. Ray 2.60 rewrites a
    loopback address to the machine's own unless RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, and would
    then look for a GCS (and a local raylet) where none listens. A head listening on every
    interface (nodes on other addresses) is left as Ray does it."""
    host, port = cluster.host_of(address), address.rpartition(":")[2]
    if host is None or not cluster.is_loopback(host) or not port.isdigit():
        return
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:  # no packet sent: the route's source address
            udp.connect(("192.0.2.1", 9))
            own = udp.getsockname()[0]
        with socket.create_connection((own, int(port)), timeout=3):
            return  # it answers on the machine's address too
    except OSError:
        os.environ.setdefault(cluster.LOOPBACK_VAR, "0")


def answer(key: bytes | str, challenge: str, node_id: str) -> str:
    key = key.encode() if isinstance(key, str) else key
    return hmac.new(key, f"plugkit-node-proof\0{challenge}\0{node_id}".encode(), hashlib.sha256).hexdigest()


def prove(challenge: str, node_id: str) -> dict:
    """On a node (a Ray task, as the node's user): a Proof's data, the answer with the key its
    `ray start` environment names (PLUGKIT_NODE_KEY), or why there is none."""
    from plugkit.protocol.node import Proof  # here: the client's check of a cluster needs no pydantic

    path = os.environ.get(cluster.NODE_KEY_VAR)
    if not path:
        return Proof(uid=os.geteuid(), why="the node was started without PLUGKIT_NODE_KEY").model_dump()
    problem = cluster.secret_problem(path, "node key")
    if problem:
        return Proof(uid=os.geteuid(), why=problem).model_dump()
    with open(path, "rb") as fh:
        return Proof(uid=os.geteuid(), answer=answer(fh.read().strip(), challenge, node_id)).model_dump()


def verdict(key: Optional[bytes | str], challenge: str, node_id: str, said: object) -> Optional[str]:
    """Why this node is not ours (None: it proved it is); `said` is its Proof's data."""
    from plugkit.protocol.node import Malformed, Proof, parse

    if key is None:
        return "this supervisor has no node key (`plugkit work ray-secrets` makes it)"
    try:
        proof = parse(Proof, said, "answer to the node-key challenge")
    except Malformed as exc:
        return str(exc)[:300]
    if proof.why:
        return proof.why[:200]
    if not hmac.compare_digest(proof.answer or "", answer(key, challenge, node_id)):
        return f"its answer to the node-key challenge is wrong (the node runs as uid {proof.uid})"
    return None


def _probe(address: str) -> tuple[int, str]:
    """Ask the GCS without a token, in this process (run with a stranger's environment, no pydantic:
    token_refusal waits on it):
    (0 refused, OPEN_RC answered, UNREACHABLE_RC not reached; what went wrong)."""
    from ray._raylet import GcsClient
    from ray.exceptions import AuthenticationError

    try:
        GcsClient(address=address).get_all_node_info(timeout=30)
    except AuthenticationError:
        return 0, ""
    except Exception as exc:  # noqa: BLE001 - unreachable in any way is one answer
        return UNREACHABLE_RC, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    return OPEN_RC, ""


def main(argv: list[str]) -> int:
    rc, said = _probe(argv[0])
    if said:
        print(said)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
