"""The Jupyter peer of `scripts/bench --peers`: one ipykernel driven through jupyter_client.

Imported by the bench (class Jupyter), it runs this file as a script in the peers' venv once per case, since
jupyter_client lives there and not in plugkit's venv; the script prints one JSON line. A command runs in the
kernel as `subprocess.run(argv)`, its output reaching the client as iopub stream messages (ipykernel
captures the kernel's file descriptors), and execute requests queue on the kernel's one shell channel.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPEW = HERE.parent / "tests" / "fixtures" / "spew.py"


class Jupyter:
    name = "jupyter"

    def __init__(self, cache: Path) -> None:
        self.python = str(cache / "venv" / "bin" / "python")
        self.home = tempfile.mkdtemp(prefix="plugkit-bench-jupyter-")
        # Runtime files, IPython profile and config stay in a throwaway dir, never the user's.
        self.env = dict(os.environ, JUPYTER_RUNTIME_DIR=self.home, IPYTHONDIR=self.home,
                        JUPYTER_CONFIG_DIR=self.home, JUPYTER_DATA_DIR=self.home, PYTHONPATH="")

    def _run(self, method: str, count: int) -> dict:
        proc = subprocess.run([self.python, __file__, method, str(count)], env=self.env, capture_output=True,
                              text=True, timeout=300, start_new_session=True)
        if proc.returncode != 0:
            raise RuntimeError((proc.stderr.strip().splitlines() or ["no output"])[-1])
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def _result(self, got: dict):
        from bench_peers import Result
        return Result(got["value"], got.get("note", ""))

    def roundtrip(self, n: int):
        return self._result(self._run("roundtrip", n))

    def sleep(self, count: int):
        return self._result(self._run("sleep", count))

    def output(self, mb: int):
        got = self._run("output", mb)
        return self._result(got["rate"]), self._result(got["rss"])

    def cold(self, n: int):
        return self._result(self._run("cold", n))

    def racing(self, k: int):
        return self._result(self._run("racing", k))

    def close(self) -> None:
        import shutil
        shutil.rmtree(self.home, ignore_errors=True)


# ---- below runs inside the peers' venv ----

def start():
    from subprocess import DEVNULL

    from jupyter_client.manager import start_new_kernel

    # The kernel's own fds go nowhere, as under a server started in the background: this script's
    # stdout carries only its JSON line, and the client sees output as iopub messages.
    return start_new_kernel(kernel_name="python3", startup_timeout=120, stdout=DEVNULL, stderr=DEVNULL)


def run_cell(kc, code: str, timeout: float = 300) -> int:
    """Execute one cell, wait for its reply and idle status; returns the bytes of stream output received."""
    got = 0

    def hook(msg) -> None:
        nonlocal got
        if msg["msg_type"] == "stream":
            got += len(msg["content"]["text"].encode())

    reply = kc.execute_interactive(code, output_hook=hook, timeout=timeout)
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"cell failed: {reply['content'].get('ename')}")
    return got


def kernel_rss(km, field: str = "VmRSS") -> int:
    with open(f"/proc/{km.provisioner.process.pid}/status") as fh:
        return next(int(ln.split()[1]) * 1024 for ln in fh if ln.startswith(field + ":"))


def pct50(samples: list[float]) -> float:
    return sorted(samples)[len(samples) // 2]


def case_roundtrip(km, kc, n: int) -> dict:
    run_cell(kc, "import subprocess, sys")
    for _ in range(3):
        run_cell(kc, "subprocess.run(['true'])")
    samples = []
    for _ in range(n):
        began = time.perf_counter()
        run_cell(kc, "subprocess.run(['true'])")
        samples.append(time.perf_counter() - began)
    return {"value": pct50(samples) * 1000}


def case_sleep(km, kc, count: int) -> dict:
    run_cell(kc, "import subprocess")
    began = time.perf_counter()
    ids = {kc.execute("subprocess.run(['sleep', '0.2'])") for _ in range(count)}
    while ids:
        msg = kc.get_shell_msg(timeout=300)
        ids.discard(msg["parent_header"].get("msg_id"))
    return {"value": time.perf_counter() - began, "note": "one cell at a time"}


def case_output(km, kc, mb: int) -> dict:
    run_cell(kc, "import subprocess, sys")
    before = kernel_rss(km)
    began = time.perf_counter()
    got = run_cell(kc, f"subprocess.run([sys.executable, {str(SPEW)!r}, '{mb}'])")
    wall = time.perf_counter() - began
    growth = kernel_rss(km, "VmHWM") - before  # the peak, as for every peer
    return {"rate": {"value": got / wall / 1e6}, "rss": {"value": growth / (1 << 20), "note": "kernel"}}


def case_cold(_km, _kc, n: int) -> dict:
    samples = []
    for _ in range(n):
        began = time.perf_counter()
        km, kc = start()
        samples.append(time.perf_counter() - began)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return {"value": pct50(samples) * 1000}


def case_racing(_km, _kc, k: int) -> dict:
    """k clients each want a kernel at once: nothing shares one, so k kernels start."""
    from concurrent.futures import ThreadPoolExecutor

    def try_start(_):  # one failed start must not leave the others' kernels running
        try:
            return start()
        except Exception as exc:  # noqa: BLE001
            return exc

    began = time.perf_counter()
    with ThreadPoolExecutor(k) as pool:
        got = list(pool.map(try_start, range(k)))
    wall = time.perf_counter() - began
    pairs = [g for g in got if not isinstance(g, Exception)]
    for km, kc in pairs:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return {"value": wall, "note": f"{len(pairs)} kernels, {len(pairs)}/{k} answered"}


def main() -> int:
    method, count = sys.argv[1], int(sys.argv[2])
    needs_kernel = method not in ("cold", "racing")
    km, kc = start() if needs_kernel else (None, None)
    try:
        print(json.dumps(globals()[f"case_{method}"](km, kc, count)))
    finally:
        if km is not None:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
