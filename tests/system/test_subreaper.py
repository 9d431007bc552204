"""become_subreaper + reap_adopted, exercised in a child interpreter so pytest itself never adopts orphans."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# One managed child (asyncio's, in the runner) that has exited, one live child
# nobody manages, and a grandchild orphaned by a double fork that outlives its
# parent and dies after adoption. Only the grandchild may be reaped.
PROGRAM = r"""
import json, os, sys, time
from runner.system import subreaper
from runner.system.subreaper import become_subreaper, is_subreaper, reap_adopted

if sys.argv[1:] == ["no-proc-children"]:
    # As on a kernel built without CONFIG_PROC_CHILDREN: the psutil scan path.
    subreaper._linux_children = lambda: None

def state(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None, None
    return fields[0].decode(), int(fields[1])

def wait_for(pid, want):
    deadline = time.monotonic() + 10
    while state(pid) != want and time.monotonic() < deadline:
        time.sleep(0.01)
    return state(pid) == want

me = os.getpid()
out = {"before": is_subreaper(), "became": become_subreaper(), "after": is_subreaper()}
managed = os.fork()
if managed == 0:
    os._exit(3)
sleeper = os.fork()
if sleeper == 0:
    time.sleep(60)
    os._exit(0)
read_end, write_end = os.pipe()
middle = os.fork()
if middle == 0:
    grandchild = os.fork()
    if grandchild == 0:
        time.sleep(0.3)
        os._exit(0)
    os.write(write_end, b"%d" % grandchild)
    os._exit(0)
os.waitpid(middle, 0)
grandchild = int(os.read(read_end, 32))

out["adopted_zombie"] = wait_for(grandchild, ("Z", me))
out["managed_zombie"] = wait_for(managed, ("Z", me))
out["too_young"] = reap_adopted({managed}, min_age_s=30)
out["reaped"] = reap_adopted({managed}, min_age_s=0)
out["again"] = reap_adopted({managed}, min_age_s=0)
out["grandchild_after"] = state(grandchild)[0]
out["managed_after"] = state(managed)[0]
out["sleeper_after"] = state(sleeper)[0]
out["grandchild"] = grandchild
os.kill(sleeper, 9)
os.waitpid(sleeper, 0)
out["managed_exit"] = os.waitstatus_to_exitcode(os.waitpid(managed, 0)[1])
print(json.dumps(out))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux-only")
@pytest.mark.parametrize("children_from", ["proc-children", "no-proc-children"])
def test_reap_adopted_reaps_orphans_but_never_managed_or_live_children(children_from):
    done = subprocess.run([sys.executable, "-c", PROGRAM, children_from], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)

    assert (out["before"], out["became"], out["after"]) == (False, True, True)
    assert out["adopted_zombie"] and out["managed_zombie"]
    assert out["too_young"] == []  # a fresh zombie may be a spawn not yet registered
    assert out["reaped"] == [out["grandchild"]]
    assert out["again"] == []
    assert out["grandchild_after"] is None
    assert out["managed_after"] == "Z"  # left for its owner, exit code intact
    assert out["managed_exit"] == 3
    assert out["sleeper_after"] in ("S", "R")



# A task asyncio spawned but the task manager has not yet heard of (under load the loop
# can take seconds between fork and the task learning its pid): it exits, ages past
# MIN_AGE_S, and a sweep runs before asyncio's watcher does. With the tracking watcher the
# sweep leaves it; with asyncio's plain watcher the same sweep takes its exit status and
# asyncio reports 255 instead of 7 (the control, so this test can fail).
LOADED_LOOP = r"""
import asyncio, json, sys, time
from runner.system import subreaper

def zombie(pid):
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"

async def main(tracking):
    subreaper.become_subreaper()  # as the runner is: only a subreaper reaps
    loop = asyncio.get_running_loop()
    watcher = subreaper.tracking_watcher() if tracking else asyncio.PidfdChildWatcher()
    watcher.attach_loop(loop)
    asyncio.set_child_watcher(watcher)
    proc = await asyncio.create_subprocess_exec("sh", "-c", "sleep 0.3; exit 7")
    # The loop is busy (blocked here) until the child is a zombie nobody has waited for yet.
    deadline = time.monotonic() + 30
    while zombie(proc.pid) is False and time.monotonic() < deadline:
        time.sleep(0.01)
    reaped = subreaper.reap_adopted(set(), min_age_s=0)  # still blocking: the watcher cannot run first
    return {"stolen": proc.pid in reaped, "exit": await proc.wait(),
            "left": sorted(subreaper.SPAWNED.snapshot())}

print(json.dumps(asyncio.run(main(sys.argv[1] == "tracking"))))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfds and /proc children are Linux-only")
@pytest.mark.parametrize("watcher, stolen, exit_code", [("tracking", False, 7), ("plain", True, 255)])
def test_a_sweep_never_takes_the_exit_status_of_a_child_asyncio_spawned(watcher, stolen, exit_code):
    done = subprocess.run([sys.executable, "-c", LOADED_LOOP, watcher], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["stolen"], out["exit"]) == (stolen, exit_code)
    assert out["left"] == []  # a waited-for child leaves the registry


# A child a thread spawned with subprocess and waits for (a git command, a version probe):
# the sweep leaves it however long it lived, until it has been a zombie for min_age_s; and a
# process that is no subreaper (a runner composed inside a test) leaves every child to its waiter.
THREAD_CHILD = r"""
import json, subprocess, sys, time
from runner.system import subreaper

def zombie(pid):
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"

def exited(argv):
    child = subprocess.Popen(argv)
    while not zombie(child.pid):
        time.sleep(0.01)
    return child

out = {}
plain = exited(["sh", "-c", "exit 3"])
out["not_subreaper"] = subreaper.reap_adopted(set(), min_age_s=0)
out["not_subreaper_exit"] = plain.wait()
subreaper.become_subreaper()
old = exited(["sh", "-c", "sleep 1.5; exit 4"])  # lived past min_age_s, a zombie for a moment only
out["long_lived"] = subreaper.reap_adopted(set(), min_age_s=1.0)
out["long_lived_exit"] = old.wait()
left = exited(["sh", "-c", "exit 5"])  # nobody waits: a zombie for longer than min_age_s is reaped
first = subreaper.reap_adopted(set(), min_age_s=0.3)
time.sleep(0.4)
out["unwaited"] = [first, subreaper.reap_adopted(set(), min_age_s=0.3) == [left.pid]]
print(json.dumps(out))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux-only")
def test_a_sweep_leaves_a_thread_spawned_child_to_its_waiter_and_reaps_only_as_a_subreaper():
    done = subprocess.run([sys.executable, "-c", THREAD_CHILD], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["not_subreaper"], out["not_subreaper_exit"]) == ([], 3)
    assert (out["long_lived"], out["long_lived_exit"]) == ([], 4)
    assert out["unwaited"] == [[], True]


# A task's escapee (`setsid ... &`, its task's root gone) is adopted and listed with its start
# time; a child the runner spawned in its own session (a version probe) is not. The escapee
# and what it started die by (pid, start time), and a stale start time (a recycled pid) hits nothing.
ADOPTED = r"""
import json, os, subprocess, tempfile, time
from runner.system import subreaper
from runner.system.kill import kill_adopted

def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False

subreaper.become_subreaper()
probe = subprocess.Popen(["sleep", "60"])
pids = tempfile.NamedTemporaryFile("r")  # not a pipe: the escapee would hold it open
subprocess.run(["sh", "-c", 'setsid sh -c "sleep 61 & echo \\$! >>$0; wait" "$0" & echo $! >>$0', pids.name],
               timeout=30)  # returns when the root exits: the escapee is an orphan now
deadline = time.monotonic() + 10
while True:
    seen = [int(x) for x in open(pids.name).read().split()]  # the two shells write in either order
    if len(seen) == 2 and set(seen) & set(dict(subreaper.adopted_children())):
        break
    assert time.monotonic() < deadline, (seen, subreaper.adopted_children())
    time.sleep(0.01)
escapee = next(p for p in seen if p in dict(subreaper.adopted_children()))
child = next(p for p in seen if p != escapee)
adopted = dict(subreaper.adopted_children())
ticks = adopted[escapee]
out = {"listed": sorted(adopted), "escapee": escapee, "child": child, "probe": probe.pid,
       "stale": kill_adopted(escapee, ticks + 1).terminated}
out["stale_left_alive"] = alive(escapee) and alive(child)
report = kill_adopted(escapee, ticks, grace_s=0.2)
out["terminated"] = sorted(report.terminated)
out["after"] = [alive(escapee), alive(child)]
probe.kill()
probe.wait()
while True:  # reap the escapee and its child (adopted once the escapee died)
    try:
        if os.waitpid(-1, os.WNOHANG)[0] == 0:
            break
    except ChildProcessError:
        break
print(json.dumps(out))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux-only")
def test_an_adopted_escapee_is_listed_apart_from_our_own_children_and_dies_with_its_descendants():
    done = subprocess.run([sys.executable, "-c", ADOPTED], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["listed"] == [out["escapee"]]  # not the probe (our session), not the escapee's child
    assert out["stale"] == [] and out["stale_left_alive"]
    assert set(out["terminated"]) == {out["escapee"], out["child"]}
    assert out["after"] == [False, False]
