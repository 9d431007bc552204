"""A task's usage as its cgroup's files give it, read with plain reads at every task's end."""

from runner.system import cgroups


def test_usage_reads_cpu_time_and_the_memory_peak_or_current(tmp_path):
    (tmp_path / "cpu.stat").write_text("usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n")
    (tmp_path / "memory.current").write_text("4096\n")
    assert cgroups.read_usage(str(tmp_path), memory=True) == cgroups.Usage(0.0025, 4096, 4096)
    (tmp_path / "memory.peak").write_text("8192\n")  # 5.19+: the peak, not the current
    assert cgroups.read_usage(str(tmp_path), memory=True) == cgroups.Usage(0.0025, 8192, 4096)
    assert cgroups.read_usage(str(tmp_path), memory=False) == cgroups.Usage(0.0025, None)


def test_usage_of_files_missing_or_unreadable_is_unknown_never_an_error(tmp_path):
    assert cgroups.read_usage(str(tmp_path / "gone"), memory=True) == cgroups.Usage(None, None)
    (tmp_path / "cpu.stat").write_text("usage_usec lots\n")
    (tmp_path / "memory.peak").write_text("max\n")
    assert cgroups.read_usage(str(tmp_path), memory=True) == cgroups.Usage(None, None)
