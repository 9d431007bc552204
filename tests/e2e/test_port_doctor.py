"""`plugkit doctor` reads the kernel's real port ranges and says how to reserve the runner's port."""

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
KEY = "net.ipv4.ip_local_reserved_ports"


def row(home, port: int) -> dict:
    result = home.cli("doctor", "--json", env={"PLUGKIT_PORT": str(port)})
    return next(c for c in json.loads(result.stdout) if c["check"] == "port reserved")


def test_doctor_prints_the_sysctl_line_for_an_unreserved_ephemeral_port(home):
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    reserved = Path("/proc/sys/net/ipv4/ip_local_reserved_ports").read_text().strip()
    # home.port came from the kernel's own pick for a bind to port 0: in the range, never reserved.
    assert low <= home.port <= high
    found = row(home, home.port)
    value = f"{reserved},{home.port}" if reserved else str(home.port)
    assert found["level"] == "warn", found
    assert f"sudo sysctl -w {KEY}={value};" in found["fix"]
    assert f"echo '{KEY} = {value}' | sudo tee /etc/sysctl.d/" in found["fix"]


def test_doctor_is_quiet_about_a_port_below_the_range(home):
    low, _ = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    found = row(home, low - 1)
    assert found["level"] == "ok" and found["fix"] == ""
