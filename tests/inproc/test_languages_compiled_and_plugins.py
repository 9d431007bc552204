"""go, c, cpp, java, rust (rustc and cargo), powershell and workspace language plugins,
through the real app with the real toolchains.

scripts/setup installs gcc, g++, golang and default-jdk, and rust is on this
machine: a missing toolchain fails these tests rather than skipping them. Only
pwsh, which Debian does not package, is skipped when absent.
"""

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from plugkit.languages import plugins as lang_plugins
from tests.support.inproc import RpcError, call
from tests.support.load import stretched

HELLO = [
    pytest.param("go", 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello from go") }\n',
                 "hello from go", id="go"),
    pytest.param("c", '#include <stdio.h>\n#include <math.h>\nint main(void) { printf("hello from c %.0f\\n", sqrt(4)); }\n',
                 "hello from c 2", id="c"),
    pytest.param("cpp", '#include <iostream>\nint main() { std::cout << "hello from cpp" << std::endl; }\n',
                 "hello from cpp", id="cpp"),
    pytest.param("java", 'public class Main {\n  public static void main(String[] a) { System.out.println("hello from java"); }\n}\n',
                 "hello from java", id="java-main-class"),
    pytest.param("java", 'import java.util.List;\n\nvar who = List.of("a body");\nSystem.out.println("hello from " + who.get(0));\n',
                 "hello from a body", id="java-bare-body"),
    pytest.param("rust", 'fn main() { println!("hello from rust"); }\n', "hello from rust", id="rust"),
]

FAILING = [
    ("go", 'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\nfunc main() { fmt.Fprintln(os.Stderr, "boom"); os.Exit(3) }\n'),
    ("c", '#include <stdio.h>\nint main(void) { fputs("boom\\n", stderr); return 3; }\n'),
    ("cpp", '#include <iostream>\nint main() { std::cerr << "boom" << std::endl; return 3; }\n'),
    ("java", 'System.err.println("boom");\nSystem.exit(3);\n'),
    ("rust", 'fn main() { eprintln!("boom"); std::process::exit(3); }\n'),
]


@pytest.fixture
async def rpc(make_client, tmp_path):
    client = await make_client()
    work = tmp_path / "work"
    work.mkdir()

    async def do(method: str, cwd: Path = work, **params):
        return await call(client, method, session_id="langs", cwd=str(cwd), **params)

    snap = await call(client, "debug.snapshot")
    # Task files live in a private dir outside the home (the home holds the token).
    do.work, do.home, do.tmp = work, Path(client.runtime.home), Path(snap["snapshot"]["executors"]["process"]["tmp_root"])
    return do


def text(res: dict, stream: str | None = None) -> str:
    return "".join(c["text"] for c in res["output"]["chunks"] if stream is None or c["stream"] == stream)


def plugin(work: Path, stem: str, body: str) -> Path:
    path = work / ".plugkit" / "lang" / f"{stem}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path


@pytest.mark.parametrize("lang, code, expected", HELLO)
async def test_hello_world_compiles_and_runs(rpc, lang, code, expected):
    res = await rpc("task.exec", lang=lang, code=code, wait_ms=60_000)
    assert res["task"]["state"] == "completed", (res["task"], text(res))
    assert text(res, "stdout") == expected + "\n"
    assert os.listdir(rpc.tmp) == []  # the task dir went with the task


@pytest.mark.parametrize("lang, code", FAILING, ids=[case[0] for case in FAILING])
async def test_failing_program_reports_its_exit_code_and_stderr(rpc, lang, code):
    res = await rpc("task.exec", lang=lang, code=code, wait_ms=60_000)
    task = res["task"]
    assert (task["state"], task["reason"], task["exit_code"]) == ("failed", "exit_nonzero", 3), text(res)
    assert text(res, "stderr").strip() == "boom"


async def test_c_compile_error_is_failed_compile_error_with_the_compiler_output(rpc):
    res = await rpc("task.exec", lang="c", code="int main(void) {\n  return undeclared_name;\n}\n", wait_ms=30_000)
    task = res["task"]
    assert (task["state"], task["reason"]) == ("failed", "compile_error")
    assert "compile" in task["message"]
    assert "undeclared_name" in text(res, "stderr") and text(res, "stdout") == ""
    assert os.listdir(rpc.tmp) == []


async def test_java_body_keeps_the_agents_line_numbers(rpc):
    res = await rpc("task.exec", lang="java", code='int ok = 1;\nString s = 42;\n', wait_ms=60_000)
    assert res["task"]["reason"] == "compile_error"
    assert "Main.java:2:" in text(res, "stderr")


async def test_rust_cargo_path_builds_a_local_crate_and_caches_its_target_dir(rpc, tmp_path):
    crate = tmp_path / "greet"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "greet"\nversion = "0.1.0"\nedition = "2021"\n')
    (crate / "src" / "lib.rs").write_text('pub fn hello(n: u32) -> String { format!("hello from greet {n}") }\n')
    loop = asyncio.get_running_loop()
    took = []
    for n in (1, 2):
        code = f'// cargo-path: greet = "../greet"\nfn main() {{ println!("{{}}", greet::hello({n})); }}\n'
        began = loop.time()
        res = await rpc("task.exec", lang="rust", code=code, wait_ms=90_000)
        took.append(loop.time() - began)
        assert res["task"]["state"] == "completed", (res["task"], text(res))
        assert text(res, "stdout") == f"hello from greet {n}\n"
    print(f"\ncargo-path build+run: first {took[0]:.2f}s, second {took[1]:.2f}s (target dir cached)")
    (cache,) = (rpc.home / "cache" / "cargo").iterdir()
    debug = cache / "debug"
    assert list(debug.glob("deps/libgreet-*.rlib"))  # the dependency stays cached ...
    assert not [p for p in debug.rglob("plugkit_task_*")]  # ... each task's own package does not
    assert os.listdir(rpc.tmp) == []


async def test_cargo_dep_offline_failure_says_why(rpc):
    code = '// cargo-dep: surely_not_cached_crate_xyz = "1"\nfn main() {}\n'
    res = await rpc("task.exec", lang="rust", code=code, wait_ms=60_000)
    task = res["task"]
    assert (task["state"], task["reason"]) == ("failed", "compile_error"), text(res)
    assert "offline" in task["message"] and "cargo-path" in task["message"]


async def test_bad_cargo_line_is_refused_before_a_task_starts(rpc):
    with pytest.raises(RpcError) as caught:
        await rpc("task.exec", lang="rust", code='fn main() {}\n// cargo-path: greet = "./nowhere"\n')
    assert caught.value.code == -32602
    assert "line 2" in str(caught.value) and "Cargo.toml" in str(caught.value)


async def test_powershell_runs_when_installed_and_is_refused_clearly_when_not(rpc):
    # Debian does not package PowerShell, so CI takes the second branch: both are real behaviour.
    if shutil.which("pwsh") is None:
        with pytest.raises(RpcError) as caught:
            await rpc("task.exec", lang="pwsh", code='Write-Output "hello from pwsh"', wait_ms=60_000)
        assert "pwsh" in str(caught.value) and len(str(caught.value).splitlines()) <= 2, str(caught.value)
        return
    res = await rpc("task.exec", lang="pwsh", code='Write-Output "hello from pwsh"', wait_ms=60_000)
    assert text(res, "stdout").strip() == "hello from pwsh"


async def test_plugin_defines_a_language_from_a_shell_command(rpc):
    plugin(rpc.work, "awk", 'name = "awk"\naliases = ["gawk"]\nsuffix = ".awk"\nrun = "awk -f {file}"\n')
    sub = rpc.work / "deeper" / "still"
    sub.mkdir(parents=True)
    # From a subdirectory too: the workspace is the nearest ancestor holding .plugkit/.
    for lang, cwd in (("awk", rpc.work), ("GAWK", sub)):
        res = await rpc("task.exec", cwd=cwd, lang=lang, code="BEGIN { print 6 * 7 }", wait_ms=10_000)
        assert res["task"]["state"] == "completed" and res["task"]["lang"] == "awk"
        assert text(res) == "42\n"


async def test_plugin_overrides_python_by_name_only(rpc):
    wrapper = f'echo via-plugin; exec {sys.executable} "$0"'
    plugin(rpc.work, "python", f'name = "python"\nsuffix = ".py"\nrun = ["bash", "-c", {json.dumps(wrapper)}, "{{file}}"]\n')
    res = await rpc("task.exec", lang="python", code="print(6 * 7)", wait_ms=10_000)
    assert text(res) == "via-plugin\n42\n"
    res = await rpc("task.exec", lang="py", code="print(6 * 7)", wait_ms=10_000)
    assert text(res) == "42\n"  # the alias was not claimed, so it is still the built-in row


async def test_invalid_plugin_is_reported_and_breaks_nothing_else(rpc):
    plugin(rpc.work, "awk", 'run = ["awk", "-f", "{file}"]\n')
    plugin(rpc.work, "broken", 'name = "broken"\nrun = 5\n')
    plugin(rpc.work, "unparsable", 'run = ["awk"\n')
    for lang, words in (("broken", ("broken.toml", "run")), ("unparsable", ("unparsable.toml", "TOML"))):
        with pytest.raises(RpcError) as caught:
            await rpc("task.exec", lang=lang, code="x")
        assert caught.value.code == -32602
        assert all(w in str(caught.value) for w in words), str(caught.value)
    with pytest.raises(RpcError, match="unparsable.toml"):
        await rpc("task.exec", lang="cobol", code="x")  # an unknown name mentions the broken files
    for lang, code in (("awk", "BEGIN { print 42 }"), ("python", "print(42)"), ("c", "int main(void){return 0;}")):
        res = await rpc("task.exec", lang=lang, code=code, wait_ms=30_000)
        assert res["task"]["state"] == "completed", lang
    problems = lang_plugins.check_plugins(str(rpc.work))
    assert len(problems) == 2 and all(p.startswith(".plugkit/lang/") for p in problems)


async def test_plugin_added_or_changed_while_the_runner_runs_is_picked_up(rpc):
    with pytest.raises(RpcError, match="unknown language"):
        await rpc("task.exec", lang="awk", code="BEGIN { print 1 }")
    path = plugin(rpc.work, "awk", 'run = ["awk", "-f", "{file}"]\n')
    res = await rpc("task.exec", lang="awk", code="BEGIN { print x + 1 }", wait_ms=10_000)
    assert text(res) == "1\n"
    path.write_text('run = ["awk", "-v", "x=41", "-f", "{file}"]\n')
    res = await rpc("task.exec", lang="awk", code="BEGIN { print x + 1 }", wait_ms=10_000)
    assert text(res) == "42\n"


async def test_timeout_covers_the_compile_step_and_cleans_up(rpc):
    plugin(rpc.work, "slowc", 'compile = ["sleep", "30"]\nrun = ["cat", "{file}"]\n')
    loop = asyncio.get_running_loop()
    began = loop.time()
    res = await rpc("task.exec", lang="slowc", code="never runs", timeout_ms=500, wait_ms=20_000)
    assert (res["task"]["state"], res["task"]["reason"]) == ("timed_out", "timeout")
    assert loop.time() - began < stretched(10)  # the timeout ended the compile, not its 30 s
    assert "never runs" not in text(res, "stdout")
    assert os.listdir(rpc.tmp) == []
