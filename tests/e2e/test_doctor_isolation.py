"""`plugkit doctor` says which task isolation is in force and how to reserve the runner's port."""

import pytest

from tests.support.runner_home import Home

pytestmark = pytest.mark.e2e


def line(output: str, name: str) -> str:
    return next(row for row in output.splitlines() if row.split()[1:2] == name.split()[:1]
                and name in row)


def test_doctor_names_the_isolation_mode_and_the_sysctl_that_reserves_the_port(home: Home):
    with open("/proc/sys/net/ipv4/ip_local_port_range") as fh:
        low, high = (int(x) for x in fh.read().split())
    assert low <= home.port <= high  # free_port() hands out an ephemeral port: the case to warn about
    assert home.cli("runner", "start").returncode == 0
    try:
        doctor = home.cli("doctor")
    finally:
        home.cli("runner", "stop")
    assert doctor.returncode == 0, doctor.stdout
    assert "one cgroup2 per task" in line(doctor.stdout, "task isolation")
    reserve = line(doctor.stdout, "port reservation")
    assert reserve.startswith("warn") and "sysctl -w net.ipv4.ip_local_reserved_ports=" in reserve
    assert reserve.rstrip().endswith(str(home.port)) or f",{home.port}" in reserve
