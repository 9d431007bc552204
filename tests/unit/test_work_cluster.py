"""The trust boundary of `plugkit work --runtime ray` (plugkit/work/cluster.py): which cluster
addresses work is sent to, and what of the supervisor's environment never travels."""

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
    assert cluster.driver_env(env) == {"PATH": "/bin"}
