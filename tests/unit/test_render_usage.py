"""The finished-task line carries the cgroup's CPU seconds and peak memory when the runner measured them."""

from client.show import render

DONE = {"task_id": 7, "state": "completed", "lang": "python", "exit_code": 0, "reason": "exit_zero",
        "duration_ms": 400}


def test_usage_is_shown_when_measured():
    line = render.state_line(dict(DONE, cpu_s=0.314, memory_peak_bytes=12 << 20))
    assert line == "task_7 completed: exit 0 (python, 0.4s, cpu 0.31s, peak 12.0 MiB)"


def test_no_usage_without_a_cgroup():
    assert render.state_line(dict(DONE, cpu_s=None, memory_peak_bytes=None)) == "task_7 completed: exit 0 (python, 0.4s)"
    assert render.state_line(DONE) == "task_7 completed: exit 0 (python, 0.4s)"
