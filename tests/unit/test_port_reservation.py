"""doctor's port-reservation row from given sysctl file contents (pure logic; the real /proc is e2e)."""

import pytest

from client.verbs.doctor import parse_ports, reservation_row

RANGE = "32768\t60999\n"
KEY = "net.ipv4.ip_local_reserved_ports"


@pytest.mark.parametrize("text, spans", [
    ("", []),
    ("\n", []),
    ("32882\n", [(32882, 32882)]),
    ("1000-1002,2000,40000-40010\n", [(1000, 1002), (2000, 2000), (40000, 40010)]),
    ("32768\t60999\n", [(32768, 60999)]),
])
def test_parse_ports_reads_both_sysctl_formats(text, spans):
    assert parse_ports(text) == spans


def test_port_in_the_ephemeral_range_gets_the_one_sysctl_line():
    level, _, detail, fix = reservation_row(32882, RANGE, "\n")
    assert level == "warn" and "32768-60999" in detail
    assert f"sudo sysctl -w {KEY}=32882;" in fix
    assert f"echo '{KEY} = 32882' | sudo tee /etc/sysctl.d/" in fix


def test_the_line_keeps_ports_already_reserved():
    # sysctl -w replaces the whole list: dropping what others reserved would break them.
    level, _, _, fix = reservation_row(32882, RANGE, "8080,40000-40010\n")
    assert level == "warn" and f"{KEY}=8080,40000-40010,32882;" in fix


@pytest.mark.parametrize("reserved", ["32882\n", "30000-33000\n", "1,32880-32890,50000\n"])
def test_a_reserved_port_is_ok(reserved):
    level, _, detail, fix = reservation_row(32882, RANGE, reserved)
    assert level == "ok" and "reserved" in detail and fix == ""


@pytest.mark.parametrize("port", [1234, 32767, 61000])
def test_a_port_outside_the_range_is_ok(port):
    level, _, detail, fix = reservation_row(port, RANGE, "")
    assert level == "ok" and "outside" in detail and fix == ""
