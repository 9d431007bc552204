"""RunnerConfig is read from the environment once, at boot, and only there: a malformed
setting stops the boot naming the variable, and no runner or plugkit module reads the
environment for its configuration when it is imported."""

import ast
import dataclasses
from pathlib import Path

import pytest

from plugkit import paths
from plugkit.config import DEFAULT_BROWSER_IDLE_S, Limits, RunnerConfig
from runner.boot import config as boot_config

ROOT = Path(__file__).resolve().parents[2]


def test_every_setting_comes_from_its_variable(tmp_path):
    env = {"PLUGKIT_HOME": str(tmp_path), "PLUGKIT_PORT": "4100", "PLUGKIT_MAX_CODE_BYTES": "99",
           "PLUGKIT_KILL_GRACE_S": "1.5", "PLUGKIT_CHROMIUM": "/opt/chrome", "PLUGKIT_BROWSER_IDLE_S": "7",
           "PLUGKIT_PYTHON": "/opt/py"}
    config = boot_config.load(env)
    assert config == RunnerConfig(home=str(tmp_path), port=4100, limits=Limits(max_code_bytes=99, kill_grace_s=1.5),
                                  chromium="/opt/chrome", browser_idle_s=7.0, python="/opt/py")
    assert boot_config.load({"HOME": str(tmp_path)}) == RunnerConfig(
        home=paths.home({"HOME": str(tmp_path)}), port=paths.DEFAULT_PORT, chromium=None,
        browser_idle_s=DEFAULT_BROWSER_IDLE_S)


@pytest.mark.parametrize("name, value", [("PLUGKIT_PORT", "70000"), ("PLUGKIT_MAX_BATCH", "many"),
                                         ("PLUGKIT_KILL_GRACE_S", "-1"), ("PLUGKIT_BROWSER_IDLE_S", "soon")])
def test_a_malformed_setting_is_refused_naming_it(name, value, tmp_path):
    with pytest.raises(ValueError, match=name):
        boot_config.load({"PLUGKIT_HOME": str(tmp_path), name: value})


def test_the_config_is_frozen_and_does_not_follow_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PLUGKIT_HOME", str(tmp_path))
    monkeypatch.setenv("PLUGKIT_MAX_BATCH", "5")
    config = boot_config.load()
    monkeypatch.setenv("PLUGKIT_MAX_BATCH", "6")
    assert config.limits.max_batch == 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.port = 1  # type: ignore[misc]


def _import_time_environment_reads(path: Path) -> list[int]:
    """Lines that touch os.environ / os.getenv or call a from_env() outside any function body,
    i.e. when the module is imported."""
    lines = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os" \
                and node.attr in ("environ", "getenv", "environb"):
            lines.append(node.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "from_env":
            lines.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return lines


def test_no_runner_or_plugkit_module_reads_the_environment_when_imported():
    offenders = {str(p.relative_to(ROOT)): found for top in ("runner", "plugkit") for p in (ROOT / top).rglob("*.py")
                 if (found := _import_time_environment_reads(p))}
    assert offenders == {}


def test_below_boot_no_runner_module_reads_a_setting_from_the_environment():
    """Deep reads (a setting looked up on first use, in one module but not another) are how
    two parts of one runner came to disagree; the config is passed down instead."""
    offenders = []
    for path in (ROOT / "runner").rglob("*.py"):
        if path.parent.name == "boot":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value.startswith("PLUGKIT_") and _reads_environment(path, node.lineno):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def _reads_environment(path: Path, lineno: int) -> bool:
    line = path.read_text().splitlines()[lineno - 1]
    return "os.environ" in line or "os.getenv" in line
