"""A pytest plugin the runner writes beside a checkout to list, without running a test, what the
check collects: each test's id and whether it is deselected, skipped or xfailed where it stands.
It is copied as text (never imported by the runner) and loaded with `-p plugkit_collect`."""

import json
import os

_DESELECTED: list[str] = []


def pytest_deselected(items):
    _DESELECTED.extend(item.nodeid for item in items)


def _marked(item, name):
    try:  # pytest's own evaluation of skip/skipif/xfail, conditions included
        from _pytest import skipping
        found = getattr(skipping, f"evaluate_{name}_marks")(item)
    except Exception:  # an older or newer pytest: the marker alone
        found = item.get_closest_marker(name) or (name == "skip" and item.get_closest_marker("skipif"))
    return found is not None and found is not False


def pytest_collection_finish(session):
    row = {"collected": {item.nodeid: ("skip" if _marked(item, "skip") else "xfail" if _marked(item, "xfail")
                                       else "run") for item in session.items},
           "deselected": list(_DESELECTED),
           "errors": int(getattr(session, "testsfailed", 0))}
    with open(os.environ["PLUGKIT_COLLECT_OUT"], "a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")
