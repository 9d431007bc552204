"""A call the runner does not answer in time is said as that (client/wire/rpc.py Client._call):
"did not answer within Ns", not "lost the runner", which a runner busy beside CPU hogs or under a
flood of connections is not (`runner status` then called a live runner lost). A real loopback
socket that takes the request and stays silent, and one that closes on it."""

import socket
import threading

import pytest

from client.wire.rpc import Client, Connection, RunnerSilent, RunnerUnavailable


@pytest.fixture
def silent():
    """A listener that reads what it is sent and answers nothing (close: hang up instead)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held, hang_up = [], threading.Event()

    def serve():
        conn, _ = listener.accept()
        held.append(conn)
        conn.recv(65536)
        if hang_up.is_set():
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], hang_up
    thread.join(timeout=30)
    for conn in held:
        conn.close()
    listener.close()


def test_a_call_not_answered_in_time_is_said_as_not_answered(silent):
    port, _ = silent
    client = Client(Connection(port, timeout=5), token="t")
    try:
        with pytest.raises(RunnerUnavailable) as said:
            client.call("runner.info", timeout=0.2)
    finally:
        client.close()
    assert str(said.value).startswith("the runner did not answer within 0.2s (runner.info; wedged or overloaded)")
    assert "lost" not in str(said.value)


def test_a_connection_closed_under_a_call_is_still_lost(silent):
    port, hang_up = silent
    hang_up.set()
    client = Client(Connection(port, timeout=5), token="t")
    try:
        with pytest.raises(RunnerUnavailable, match="lost the runner during gate.verify"):
            client.call("gate.verify", timeout=5)
    finally:
        client.close()


class _Unanswered:
    """A follower whose task.wait the runner did not answer in time."""

    sink = None

    def take(self, out) -> None:
        pass

    def follow(self, info, deadline):
        raise RunnerSilent("task.wait", 30)


def test_exec_following_a_task_the_runner_did_not_answer_for_says_so_not_lost():
    from client.verbs.exec import follow_started

    with pytest.raises(RunnerUnavailable) as said:
        follow_started(None, _Unanswered(), {"task_id": 4}, {}, None, {}, 30.0, 1e18)
    assert str(said.value) == ("the runner did not answer within 30s (task.wait; wedged or overloaded) while "
                               "following task_4; `plugkit exec:status task_4` asks again")
