"""A socket that answers /health as a plugkit runner would, to test who gets the token."""

import json
import socket
import threading


class FakeRunner(threading.Thread):
    """Claims to be a plugkit runner with a pid that is not the port file's; records requests."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.pid = pid
        self.seen = b""

    def run(self) -> None:
        try:
            while True:
                conn, _ = self.sock.accept()
                with conn:
                    self.seen += conn.recv(65536)
                    body = json.dumps({"ok": True, "pid": self.pid, "service": "plugkit-runner"}).encode()
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        except OSError:
            return
