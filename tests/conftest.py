"""Shared fixtures. The autouse leak check fails any test that leaves a process behind."""

import os
import signal
import time

import psutil
import pytest

from tests.support.load import stretched

# A suite started in the background by a non-interactive shell (`cmd &`, as CI scripts and
# nohup do) inherits SIGINT ignored, and an ignored signal stays ignored across exec: every
# CLI a test sends Ctrl-C would ignore it. The tests of Ctrl-C need it delivered.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Runners the tests start search with BM25 alone: where plugkit[semantic] is installed (setup
# installs it) a query would load torch and embed the workspace in the background, a core and
# ~480 MiB per runner. tests/system/test_search_semantic.py turns it on where it is the subject.
os.environ.setdefault("PLUGKIT_SEARCH_SEMANTIC", "0")

# Every process a test starts (runners, tasks, CLIs) inherits this marker, so
# the leak check can find them even after they were reparented away from us.
LEAK_MARK = "PLUGKIT_TEST_MARK"


# The suite's slowest files, longest first (tests/slow_files.txt, from a full run's
# --durations): they are collected first, so the two processes of `scripts/test` (xdist,
# --dist loadfile, --no-loadscope-reorder) start on them and end on the many short files,
# finishing together instead of one idling while the other runs a long file picked up last.
# Within a file the order is unchanged (module fixtures and "last in the module" tests hold).
SLOW_FILES = os.path.join(os.path.dirname(__file__), "slow_files.txt")


# A test driving a real agent host gets this long before pytest-timeout ends it (the suite's
# default, pyproject's 120 s, stays for the rest). It only ends a hung host: beside CPU hogs on a
# shared 2-core machine one Kilo start (~20 s of CPU) took 80-300 s to its first model request,
# and a test may run a host more than once (tests/hosts/hosts.py `run` allows one 600 s).
# A file's own timeout mark wins.
HOST_TEST_TIMEOUT_S = 1200


def pytest_collection_modifyitems(config, items):
    with open(SLOW_FILES) as fh:
        slow = [line.split()[1] for line in fh if line.strip() and not line.startswith("#")]
    rank = {path: i for i, path in enumerate(slow)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
    for item in items:
        if item.nodeid.startswith("tests/hosts/") and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(HOST_TEST_TIMEOUT_S))


def _marked(mark: str) -> list[psutil.Process]:
    found = []
    me = os.getpid()
    for proc in psutil.process_iter(["pid"]):
        if proc.pid == me:
            continue
        try:
            if proc.environ().get(LEAK_MARK) == mark and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def _describe(procs: list[psutil.Process]) -> str:
    out = []
    for p in procs:
        try:
            out.append(f"{p.pid}: {' '.join(p.cmdline())[:120]}")
        except psutil.Error:
            out.append(f"{p.pid}: <gone>")
    return "; ".join(out)


@pytest.fixture(autouse=True)
def no_leftover_processes(request, monkeypatch):
    """Tag everything the test spawns; after it, nothing tagged (or a child of ours) may live."""
    mark = f"{os.getpid()}-{request.node.nodeid}"
    monkeypatch.setenv(LEAK_MARK, mark)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    # What the test ended may still be exiting: 5 s on a quiet machine, stretched by the load (a
    # killed tree beside CPU hogs waits its turn for a CPU to exit), then it is a leak.
    deadline = time.monotonic() + stretched(5.0)
    while True:
        children = [
            p for p in psutil.Process().children(recursive=True)
            if p.pid not in before and _alive(p)
        ]
        leaked = {p.pid: p for p in _marked(mark) + children}
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if leaked:
        desc = _describe(list(leaked.values()))
        for p in leaked.values():
            try:
                p.kill()
            except psutil.Error:
                pass
        pytest.fail(f"test left processes running: {desc}")


def _alive(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An isolated PLUGKIT_HOME on a free port, also set in this process's environment."""
    from tests.support.runner_home import Home, free_port

    h = Home(path=tmp_path / "home", port=free_port())
    monkeypatch.setenv("PLUGKIT_HOME", str(h.path))
    monkeypatch.setenv("PLUGKIT_PORT", str(h.port))
    yield h
    h.stop_all()


@pytest.fixture(scope="module")
def module_runner(tmp_path_factory):
    """The module's one runner (tests/support/shared_runner.py), stopped after its last test."""
    from tests.support.shared_runner import start_module_runner

    h = start_module_runner(tmp_path_factory.mktemp("module-runner"))
    yield h
    h.stop_all()


@pytest.fixture
def shared_home(module_runner, monkeypatch, request):
    """Like `home`, on the module's runner, in a session of this test's own (PLUGKIT_SESSION).
    For tests that only run tasks; one that starts, stops or counts runners takes `home`."""
    from tests.support import shared_runner

    pid = shared_runner.enter(module_runner, monkeypatch, request.node.nodeid)
    yield module_runner
    shared_runner.check_still_serving(module_runner, pid)
