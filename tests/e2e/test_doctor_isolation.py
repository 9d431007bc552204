"""`plugkit doctor` says which task isolation is in force: a cgroup per task, or tags + adopted orphans."""

import pytest

from tests.support.runner_home import Home

pytestmark = pytest.mark.e2e


def isolation_line(output: str) -> str:
    return next(row for row in output.splitlines() if "task isolation" in row)


@pytest.mark.parametrize("cgroups,level,words", [
    ("1", "ok", "one cgroup2 per task"), ("0", "warn", "tags + adopted orphans"),
])
def test_doctor_names_the_isolation_mode_in_force(home: Home, cgroups, level, words):
    env = {"PLUGKIT_CGROUPS": cgroups}
    assert home.cli("runner", "start", env=env).returncode == 0
    try:
        doctor = home.cli("doctor")
    finally:
        home.cli("runner", "stop")
    line = isolation_line(doctor.stdout)
    assert line.startswith(level) and words in line, doctor.stdout


@pytest.mark.parametrize("clone3,words", [("1", "clone3 straight into the task's cgroup"),
                                          ("0", "shell shim + cgroup.procs (turned off by PLUGKIT_CLONE3=0)")])
def test_doctor_names_the_spawn_in_force(home: Home, tmp_path, clone3, words):
    env = {"PLUGKIT_CLONE3": clone3}
    assert home.cli("runner", "start", env=env).returncode == 0
    try:
        ran = home.cli("exec:bash", "true", cwd=str(tmp_path), env={"PLUGKIT_SESSION": "s"})
        assert ran.returncode == 0, ran.stderr
        doctor = home.cli("doctor")
    finally:
        home.cli("runner", "stop")
    line = next(row for row in doctor.stdout.splitlines() if "task spawn" in row)
    assert words in line, doctor.stdout
