"""plugkit.chromium's rules as pure logic: which Chromium (one rule for runner and doctor) and
how the sandbox verdict reads a probe's answer. The real probe runs in
tests/system/test_browser_sandbox.py."""

import os
import stat

import pytest

from plugkit.chromium import ENV, FALLBACK, NAMES, ChromiumNotFound, find_chromium, sandbox_for


def _exe(path):
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_plugkit_chromium_wins_and_is_the_only_candidate_when_set(tmp_path):
    mine = _exe(tmp_path / "my-chrome")
    _exe(tmp_path / "chromium")
    assert find_chromium({ENV: mine, "PATH": str(tmp_path)}) == mine
    assert find_chromium({ENV: "my-chrome", "PATH": str(tmp_path)}) == mine  # a bare name: looked up on PATH
    with pytest.raises(ChromiumNotFound, match=f"{ENV}=/nope/chrome; install it"):
        find_chromium({ENV: "/nope/chrome", "PATH": str(tmp_path)})


def test_unset_means_the_first_known_name_on_path(tmp_path):
    later = _exe(tmp_path / NAMES[-1])
    assert find_chromium({"PATH": str(tmp_path)}) == later
    first = _exe(tmp_path / NAMES[0])
    assert find_chromium({"PATH": str(tmp_path)}) == first


def test_nothing_on_path_falls_back_or_says_what_was_tried(tmp_path):
    if os.access(FALLBACK, os.X_OK):
        assert find_chromium({"PATH": str(tmp_path)}) == FALLBACK
    else:
        with pytest.raises(ChromiumNotFound, match="looked for chromium"):
            find_chromium({"PATH": str(tmp_path)})


def test_root_never_probes_and_says_why():
    def probe():
        raise AssertionError("root needs no probe")

    verdict = sandbox_for("/usr/bin/chromium", euid=0, probe=probe)
    assert not verdict.on and verdict.why.startswith("running as root")


def test_a_refusing_kernel_turns_the_sandbox_off_and_names_the_refusal_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("CHROME_DEVEL_SANDBOX", raising=False)
    monkeypatch.setattr("plugkit.chromium._HELPER_DIRS", ())  # no setuid helper installed on this machine
    refusal = "unshare(CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNET): Operation not permitted"
    verdict = sandbox_for(_exe(tmp_path / "chromium"), euid=1000, probe=lambda: refusal)
    assert not verdict.on
    assert f"the kernel refuses the sandbox ({refusal}" in verdict.why and "sysctl" in verdict.why


def test_a_working_probe_keeps_the_sandbox_on():
    verdict = sandbox_for("/usr/bin/chromium", euid=1000, probe=lambda: None)
    assert verdict.on and "user namespaces" in verdict.why
