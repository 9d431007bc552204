"""scripts/setup and scripts/hosts, run for real (bash, node, npm) on copies of the repo's pins.

A fresh machine failed because the hosts' lock had drifted from what npm accepts and nothing
said so until the real-host tests ran; and setup buried its own few lines under npm's usage
page, pyenv's shim complaints and pip's warnings. Here: the lock check is red on drift in one
line, setup stops on it before installing anything, the hosts count as installed only when
every pinned host and command is there as the lock pins it, and setup says one line per step
and a failed tool's last lines only. Python and pip are stand-ins that make that noise (a real
virtualenv costs minutes of network); bash, node, npm and the scripts are the real ones.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PINS = ROOT / "tests" / "hosts"
NOISE = "WARNING: Location 'file:///opt/pypi/simple/p{}/' is ignored: it is neither a file nor a directory."


def run(argv, cwd=ROOT, **env) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, timeout=60)


def pins_copy(tmp_path: Path, edit=None, edit_lock=None) -> Path:
    src = tmp_path / "pins"
    src.mkdir()
    package, lock = (json.loads((PINS / name).read_text()) for name in ("package.json", "package-lock.json"))
    if edit:
        edit(package["dependencies"])
    if edit_lock:
        edit_lock(lock["packages"])
    (src / "package.json").write_text(json.dumps(package, indent=2))
    (src / "package-lock.json").write_text(json.dumps(lock, indent=2))
    return src


def test_the_committed_lock_passes_the_check():
    done = run([ROOT / "scripts" / "hosts", "check"])
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def _bump(deps):
    deps["@anthropic-ai/claude-code"] = "2.1.198"


def _add(deps):
    deps["left-pad"] = "1.3.0"


def _range(deps):
    deps["@google/gemini-cli"] = "^0.61.0"


def _transitive(packages):
    packages["node_modules/detect-libc"]["version"] = "1.0.0"  # @github/copilot asks for ^2.1.2


@pytest.mark.parametrize("edit, edit_lock, named", [
    (_bump, None, "@anthropic-ai/claude-code 2.1.198"),
    (_add, None, "left-pad"),
    (_range, None, "not an exact version"),
    (None, _transitive, "detect-libc@1.0.0"),
], ids=["version-bumped", "host-added", "range-pin", "transitive-entry"])
def test_a_drifted_lock_fails_the_check_in_one_line(tmp_path, edit, edit_lock, named):
    done = run([ROOT / "scripts" / "hosts", "check", pins_copy(tmp_path, edit, edit_lock)])
    assert done.returncode == 1
    assert len(done.stdout.splitlines()) == 1 and done.stdout.startswith("hosts: ") and named in done.stdout


def installed_hosts(base: Path) -> Path:
    """A hosts directory as npm leaves it after installing the committed lock, files stubbed:
    each pinned package's manifest, its commands in .bin, and npm's record of the tree."""
    lock = json.loads((PINS / "package-lock.json").read_text())["packages"]
    pinned = json.loads((PINS / "package.json").read_text())["dependencies"]
    modules = base / "hosts" / "node_modules"
    (modules / ".bin").mkdir(parents=True)
    record = {}
    for name, version in pinned.items():
        entry = lock[f"node_modules/{name}"]
        (modules / name).mkdir(parents=True)
        (modules / name / "package.json").write_text(json.dumps({"name": name, "version": version, "bin": entry["bin"]}))
        for command in entry["bin"]:
            (modules / ".bin" / command).write_text("")
        record[f"node_modules/{name}"] = entry
    (modules / ".package-lock.json").write_text(json.dumps({"lockfileVersion": 3, "packages": record}))
    return modules.parent


def test_the_hosts_are_current_only_with_every_pinned_host_and_command(tmp_path):
    hosts = installed_hosts(tmp_path)
    current = [ROOT / "scripts" / "hosts", "current", hosts]
    assert run(current).returncode == 0
    # kilo, opencode and copilot are pinned as well as the first four: each one counts.
    (hosts / "node_modules" / ".bin" / "kilo").unlink()
    done = run(current)
    assert done.returncode == 1 and "@kilocode/cli's command kilo is missing" in done.stdout


def test_a_host_installed_other_than_the_lock_pins_is_not_current(tmp_path):
    hosts = installed_hosts(tmp_path)
    record_file = hosts / "node_modules" / ".package-lock.json"
    record = json.loads(record_file.read_text())
    record["packages"]["node_modules/opencode-ai"]["integrity"] = "sha512-another-tarball"
    record_file.write_text(json.dumps(record))
    done = run([ROOT / "scripts" / "hosts", "current", hosts])
    assert done.returncode == 1 and "node_modules/opencode-ai@1.18.33" in done.stdout


FAKE_PIP = """#!/bin/sh
# The virtualenv's python: pip is recorded and talks like this machine's pip; the rest is real.
if [ "$1" = -m ] && [ "$2" = pip ]; then
  echo "$*" >>"$SETUP_TEST_CALLS"
  i=0; while [ $i -lt 60 ]; do echo "WARNING: Location 'file:///opt/pypi/simple/p$i/' is ignored: it is neither a file nor a directory." >&2; i=$((i+1)); done
  if [ -n "$SETUP_TEST_PIP_FAILS" ]; then echo "ERROR: No matching distribution found for aiohttp" >&2; exit 1; fi
  exit 0
fi
if [ "$1" = -c ] && [ -n "$SETUP_TEST_NO_SEMANTIC" ]; then
  case "$2" in *wordllama*) exit 1 ;; esac
fi
exec "$SETUP_TEST_PYTHON" "$@"
"""
FAKE_PYTHON = """#!/bin/sh
# A Python 3.11 on PATH that makes the virtualenv above.
case "$1" in
  -V) echo "Python 3.11.9" ;;
  -m) mkdir -p "$3/bin" && cp "$SETUP_TEST_FAKES/venv-python" "$3/bin/python" ;;
esac
"""
PYENV_SHIM = """#!/bin/sh
echo "pyenv: $(basename "$0"): command not found" >&2
echo "The \\`$(basename "$0")' command exists in these Python versions:" >&2
exit 127
"""


@pytest.fixture
def checkout(tmp_path):
    """A copy of the repo's setup with its pins and a small package, python and pip stand-ins."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("setup", "hosts"):
        shutil.copy2(ROOT / "scripts" / name, repo / "scripts" / name)
    shutil.copytree(PINS, repo / "tests" / "hosts", ignore=lambda d, names: [n for n in names if not n.startswith("package")])
    (repo / "pyproject.toml").write_text("[project]\nname = 'plugkit'\n")
    for package in ("plugkit", "runner", "client"):
        (repo / package).mkdir()
        (repo / package / "__init__.py").write_text("")
    fakes = tmp_path / "fakes"
    (fakes / "bin").mkdir(parents=True)
    for path, text in ((fakes / "venv-python", FAKE_PIP), (fakes / "bin" / "python3.11", FAKE_PYTHON),
                       (fakes / "bin" / "python3.13", PYENV_SHIM), (fakes / "bin" / "python3.12", PYENV_SHIM)):
        path.write_text(text)
        path.chmod(0o755)
    calls = tmp_path / "pip-calls"
    env = {"PATH": f"{fakes / 'bin'}:{os.environ['PATH']}", "SETUP_TEST_FAKES": str(fakes), "SETUP_TEST_CALLS": str(calls),
           "SETUP_TEST_PYTHON": sys.executable, "PLUGKIT_HOSTS_DIR": str(installed_hosts(tmp_path)),
           "PLUGKIT_SETUP_SEMANTIC": "0"}

    def setup(**more) -> tuple[int, list[str], list[str]]:
        done = run([repo / "scripts" / "setup"], cwd=tmp_path, **{**env, **more})
        pips = calls.read_text().splitlines() if calls.exists() else []
        return done.returncode, (done.stdout + done.stderr).splitlines(), pips

    setup.repo = repo
    return setup


def test_setup_says_one_line_per_step_and_one_line_when_set_up(checkout):
    rc, lines, pips = checkout()
    assert rc == 0, lines
    assert [line.split(" ... ")[0] for line in lines[:-1]] == [
        "setup: a virtualenv in .venv (Python 3.11.9)", "setup: plugkit and its test tools into .venv (pip)"]
    assert lines[-1].startswith("setup: ready (") and "put plugkit on PATH with: " in lines[-1]
    assert len(pips) == 2  # pip upgraded in the new virtualenv, then plugkit installed

    rc, lines, pips = checkout()
    assert rc == 0 and len(lines) == 1 and lines[0].startswith("setup: ready (nothing to install, ")
    assert len(pips) == 2

    (checkout.repo / "runner" / "new.py").write_text("")  # a changed source is reinstalled
    rc, lines, pips = checkout()
    assert rc == 0 and len(lines) == 2 and len(pips) == 3


def test_the_semantic_layer_is_installed_without_torch_when_missing(checkout):
    rc, lines, pips = checkout(PLUGKIT_SETUP_SEMANTIC="1", SETUP_TEST_NO_SEMANTIC="1")
    assert rc == 0, lines
    assert lines[-2].startswith("setup: the semantic search layer into .venv (pip) ... ")
    assert pips[-1].endswith(".[semantic]") and not [p for p in pips if "torch" in p]  # the extra alone: no torch

    rc, lines, pips = checkout(PLUGKIT_SETUP_SEMANTIC="1")  # installed: nothing more
    assert rc == 0 and len(lines) == 1 and lines[0].startswith("setup: ready (nothing to install, ")


def test_a_failed_step_shows_its_last_lines_without_the_machines_noise(checkout):
    rc, lines, _ = checkout(SETUP_TEST_PIP_FAILS="1")
    assert rc == 1
    assert "FAILED after" in lines[-2] and lines[-1].strip() == "ERROR: No matching distribution found for aiohttp"
    assert not [line for line in lines if "is ignored" in line or "pyenv" in line]


def test_setup_stops_on_a_drifted_lock_before_installing_anything(checkout):
    package_json = checkout.repo / "tests" / "hosts" / "package.json"
    package_json.write_text(package_json.read_text().replace('"2.1.197"', '"2.1.198"'))
    rc, lines, pips = checkout(PLUGKIT_HOSTS_DIR=str(checkout.repo / "no-hosts"))
    assert rc == 1 and len(lines) == 1 and lines[0].startswith("setup: hosts: package.json pins @anthropic-ai/claude-code")
    assert pips == [] and not (checkout.repo / "no-hosts").exists()


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    after = readme.split("Set up and run the whole test suite", 1)[1]
    command = next(line.strip() for line in after.splitlines() if line.startswith("    "))
    assert command == "scripts/test"
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == f"exec {command}"
