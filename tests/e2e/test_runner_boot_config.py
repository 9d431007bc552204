"""The daemon reads its configuration once, at boot: a malformed setting stops the start with
one line naming the variable, before anything is bound or written."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("name, value", [("PLUGKIT_MAX_BATCH", "many"), ("PLUGKIT_BROWSER_IDLE_S", "soon"),
                                         ("PLUGKIT_PORT", "70000")])
def test_a_malformed_setting_stops_the_runner_naming_it(home, name, value):
    done = subprocess.run([sys.executable, "-m", "runner"], env={**home.env, name: value},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("plugkit runner: ") and name in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert home.discovery() is None
