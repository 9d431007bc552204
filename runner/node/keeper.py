"""The worker's process group on a node, bound to the life of the Ray worker process running its
attempt: when that process dies (a force cancel, the supervisor's driver gone, the raylet killing
it), the whole group goes with it, so nothing keeps running unowned on the node.

The group's leader is a keeper that forks the worker and waits for it. It asks the kernel for a
signal when its parent dies (PR_SET_PDEATHSIG) and kills its group then: no process polls
/proc for the owner (the guard this replaces asked every 0.2 s, and a zombie owner once looked
alive to it). A signal to the worker alone would leave what the worker started behind; inside the
sandbox bwrap's PID namespace would take those anyway, but a person's --no-sandbox has none.
The keeper exits as its worker did (its code, or the same signal), so the attempt reads the
worker's own ending.
"""

import os
import subprocess
import sys

# Run with -I (isolated: neither the worktree, which is cwd and the worker's to write, nor
# PYTHON* variables choose the modules it imports). argv: the parent's pid, "--", the worker's argv.
KEEPER = r"""
import ctypes, os, signal, sys
PR_SET_PDEATHSIG = 1
parent, argv = int(sys.argv[1]), sys.argv[3:]

def end(*_):
    os.killpg(0, signal.SIGKILL)  # the whole group, this keeper with it

signal.signal(signal.SIGHUP, end)
# The signal comes when the thread that forked us ends: the Ray task's, which outlives the attempt.
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGHUP, 0, 0, 0) != 0:
    sys.exit(f"plugkit keeper: prctl(PR_SET_PDEATHSIG): {os.strerror(ctypes.get_errno())}")
if os.getppid() != parent:  # it died before the prctl: the signal will never come
    end()
worker = os.fork()
if worker == 0:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"plugkit: {argv[0]}: {exc.strerror}\n".encode())
        os._exit(127)
# Its copies of the pipes go: the attempt reads the worker's end of output, not the keeper's.
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
_, status = os.waitpid(worker, 0)
if os.WIFSIGNALED(status):  # ended by a signal: so is its keeper (SIGKILL has no handler to reset)
    if os.WTERMSIG(status) not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    os.kill(os.getpid(), os.WTERMSIG(status))
os._exit(os.waitstatus_to_exitcode(status))
"""


def spawn(argv: list[str], cwd: str, env: dict[str, str]) -> subprocess.Popen:
    """The worker under its keeper, in a session and group of their own (the keeper leads it:
    killpg(keeper.pid) ends them all); stdin and stdout (stderr merged) are pipes to this process."""
    return subprocess.Popen([sys.executable, "-I", "-c", KEEPER, str(os.getpid()), "--", *argv], cwd=cwd, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
