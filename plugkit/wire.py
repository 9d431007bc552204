"""The one small JSON-RPC client of a plugkit runner: a keep-alive HTTP/1.1 connection over a raw
loopback socket. The `plugkit` client calls its runner through it (client/wire/rpc.py adds
discovery, the token file's checks and restarts), and the Ray node side calls its node's runner
(runner/node/hosting.py): one way of speaking to a runner, not two.

Standard library only, and the C halves of it where the Python halves import more than they give:
`_socket` rather than socket.py (which loads enum and selectors, ~3 ms of every `plugkit` call,
for flags never read) and plugkit.codec rather than json (re, ~5 ms). http.client, urllib and
asyncio each cost tens of milliseconds to import on that hot path.
"""

import _socket

from plugkit import codec


class Connection:
    """One keep-alive HTTP/1.1 connection to a runner on loopback."""

    def __init__(self, port: int, timeout: float = 5.0) -> None:
        self.port = port
        # Not socket.create_connection: its getaddrinfo encodes the host with the idna codec,
        # an import (encodings.idna, stringprep) of ~3 ms on every CLI call for a numeric address.
        self.sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        try:
            self.sock.settimeout(timeout)
            self.sock.connect(("127.0.0.1", port))
        except BaseException:
            self.sock.close()
            raise
        self.sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        self._buf = b""

    def close(self) -> None:
        self.sock.close()

    def request(self, method: str, path: str, body: bytes = b"", headers: str = "",
                timeout: float | None = None) -> tuple[int, bytes]:
        if timeout is not None:
            self.sock.settimeout(timeout)
        head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n{headers}"
                f"Content-Length: {len(body)}\r\n\r\n")
        self.sock.sendall(head.encode() + body)
        while b"\r\n\r\n" not in self._buf:
            self._recv()
        raw_head, self._buf = self._buf.split(b"\r\n\r\n", 1)
        lines = raw_head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(self._buf) < length:
            self._recv()
        payload, self._buf = self._buf[:length], self._buf[length:]
        return status, payload

    def _recv(self) -> None:
        chunk = self.sock.recv(262144)
        if not chunk:
            raise ConnectionError("runner closed the connection")
        self._buf += chunk

    def rpc(self, token: str, req_id: int, method: str, params: dict,
            timeout: float | None = None) -> tuple[int, bytes]:
        """One JSON-RPC 2.0 call with the bearer token: (HTTP status, the reply's bytes). The
        caller reads the reply (codec.loads): its errors are the caller's to word."""
        body = codec.dumps({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params}).encode()
        headers = f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        return self.request("POST", "/rpc", body, headers, timeout=timeout)
