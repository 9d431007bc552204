"""Every language row of this issue actually runs, through the real app and real interpreters."""

import pytest

from tests.support.inproc import call

CASES = [
    ("bash", 'echo "$((6 * 7))"'),
    ("sh", "echo 42"),
    ("python", "print(6 * 7)"),
    ("py", "import sys; print(sys.version_info >= (3, 11) and 42)"),
    ("node", "console.log(6 * 7)"),
    ("js", "const f = (a, b) => a * b; console.log(f(6, 7))"),
    ("typescript", "const answer: number = 6 * 7;\nconsole.log(answer)"),
    ("ts", "function f(a: number, b: number): number { return a * b }\nconsole.log(f(6, 7))"),
]


@pytest.mark.parametrize("lang, code", CASES)
async def test_language_runs(make_client, tmp_path, lang, code):
    client = await make_client()
    res = await call(client, "task.exec", session_id="langs", cwd=str(tmp_path), lang=lang,
                     code=code, wait_ms=60_000)
    assert res["task"]["state"] == "completed", res
    assert "".join(c["text"] for c in res["output"]["chunks"]).strip() == "42"


async def test_unicode_code_survives_the_temp_file(make_client, tmp_path):
    client = await make_client()
    res = await call(client, "task.exec", session_id="langs", cwd=str(tmp_path), lang="python",
                     code="print('héllo ✓ 日本')", wait_ms=30_000)
    assert res["output"]["chunks"][0]["text"] == "héllo ✓ 日本\n"
