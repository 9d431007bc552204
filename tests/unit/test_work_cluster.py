"""The trust boundary of `plugkit work --runtime ray` (plugkit/work/cluster.py): which cluster
addresses work is sent to, and what of the supervisor's environment never travels."""

import os

import pytest

from plugkit.work import cluster


@pytest.mark.parametrize("address", ["127.0.0.1:6379", "localhost:6379", "[::1]:6379", "127.8.9.10:1"])
def test_a_loopback_cluster_is_accepted(address):
    assert cluster.refusal(address, {}, False) is None


@pytest.mark.parametrize("address", ["10.0.0.5:6379", "ray-head.example.com:6379", "0.0.0.0:6379",
                                     "[2001:db8::1]:6379"])
def test_rejects_a_remote_cluster_without_tls_or_a_persons_flag(address):
    why = cluster.refusal(address, {}, False)
    assert why and "RAY_USE_TLS=1" in why and "--allow-remote-cluster" in why
    assert cluster.refusal(address, {"RAY_USE_TLS": "1"}, False) is None
    assert cluster.refusal(address, {}, True) is None


@pytest.mark.parametrize("address", [None, "", "ray://127.0.0.1:10001", "127.0.0.1", "http://x:1", "host:port"])
def test_rejects_what_is_not_a_gcs_address(address):
    assert cluster.refusal(address, {}, True)


def test_the_supervisors_home_and_identity_never_travel():
    env = {"PATH": "/bin", "PLUGKIT_HOME": "/home/me/.plugkit", "PLUGKIT_PORT": "7777", "PLUGKIT_TOKEN": "t",
           "PLUGKIT_RUNNER_ID": "r", "PLUGKIT_TASK_ID": "3", "PLUGKIT_SESSION_ID": "s", "PLUGKIT_HOME_ID": "h"}
    # The driver gets Ray's token mode and where the token and the node key are, under the home.
    assert cluster.driver_env(env, "/h") == {"PATH": "/bin", "RAY_AUTH_MODE": "token",
                                             "RAY_AUTH_TOKEN_PATH": "/h/ray/auth_token",
                                             "PLUGKIT_NODE_KEY": "/h/ray/node_key"}


def test_secrets_are_made_private_once_and_a_readable_one_is_refused(tmp_path):
    path = str(tmp_path / "ray" / "auth_token")
    assert cluster.make_secret(path) and not cluster.make_secret(path)
    assert oct(os.stat(path).st_mode & 0o777) == "0o600" and cluster.secret_problem(path, "token") is None
    assert len(cluster.read_secret(path)) == 64
    os.chmod(path, 0o644)
    assert "readable by others" in cluster.secret_problem(path, "token") and cluster.read_secret(path) is None


def test_a_node_answers_the_challenge_only_with_the_key_and_for_its_own_id():
    from runner.node import auth as ray_auth

    said = {"uid": 1000, "answer": ray_auth.answer(b"k", "c", "node-a")}
    assert ray_auth.verdict(b"k", "c", "node-a", said) is None
    assert "wrong" in ray_auth.verdict(b"k", "c", "node-b", said)  # replayed for another node
    assert "wrong" in ray_auth.verdict(b"other", "c", "node-a", said)
    assert ray_auth.verdict(b"k", "c", "node-a", {"uid": 1000, "why": "no key"}) == "no key"
    # An answer of another shape (another plugkit, or not plugkit at all) is no proof, and says why.
    assert "malformed answer to the node-key challenge" in ray_auth.verdict(b"k", "c", "node-a", {**said, "x": 1})
