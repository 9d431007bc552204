"""The order of strength of the workspace's settings (plugkit.lifecycle.config_pin.STRENGTH):
what the runner adopts from the file by itself and what waits for a person."""

import pytest

from plugkit.lifecycle.config import parse
from plugkit.lifecycle.config_pin import compare, stronger, values


@pytest.mark.parametrize("key, held, seen, adopted", [
    ("gates", "off", "advisory", True),
    ("gates", "advisory", "enforce", True),
    ("gates", "enforce", "off", False),
    ("gates", "enforce", "advisory", False),
    ("verify", None, "pytest -q", True),
    ("verify", "pytest -q", None, False),
    ("verify", "pytest -q", "true", False),  # one check for another: a person's act
    ("verify_lang", "bash", "python", False),
    ("work_merge", "ff", "merge", False),
    ("ready_limit", 3, 1, False),
    ("work_runtime", "ray", "local", True),  # workers back home: adopted
    ("work_runtime", "local", "ray", False),  # workers out to a cluster: a person's to confirm
    ("work_cluster", "127.0.0.1:6379", "10.0.0.5:6379", False),  # where work goes: always a person's
    ("work_docker", False, True, False),  # a container engine for workers: a person's to turn on
    ("work_docker", True, False, True),  # and adopted when turned off
])
def test_only_a_ranked_stronger_value_is_adopted(key, held, seen, adopted):
    assert stronger(key, held, seen) is adopted


def test_compare_holds_stronger_values_and_reports_the_rest():
    held = values(parse({"gates": "advisory", "verify": "pytest -q"}))
    now, drift = compare(held, parse({"gates": "enforce", "verify": "true"}))
    assert now["gates"] == "enforce" and now["verify"] == "pytest -q"
    assert [(d.key, d.view, d.held) for d in drift] == [("verify", "true", "pytest -q")]


def test_a_typo_reads_as_the_default_and_so_as_weaker():
    _now, drift = compare(values(parse({"gates": "enforce"})), parse({"gates": "enforse"}))
    assert [(d.key, d.view) for d in drift] == [("gates", "advisory")]
