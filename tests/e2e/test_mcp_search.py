"""`plugkit mcp` driven by the MCP SDK's own client over stdio: the real CLI as the server,
the real runner behind it, a real git repository as the workspace."""

import pytest

from tests.support.search_repo import repo  # noqa: F401 - the same known repository
from tests.support.runner_home import cli_argv

mcp = pytest.importorskip("mcp")
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

pytestmark = pytest.mark.e2e


async def test_the_search_tool_answers_over_mcp_stdio(home, repo):  # noqa: F811
    argv = cli_argv()  # the installed plugkit, as every e2e test runs it
    server = StdioServerParameters(command=argv[0], args=[*argv[1:], "mcp"], env=home.env, cwd=str(repo))
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools["search"].input_schema["properties"]) >= {"query", "path", "lang", "limit"}
            result = await session.call_tool("search", {"query": "load_config"})
            assert not result.is_error
            text = result.content[0].text
            assert text.startswith("definitions:\n  load_config -> src/loader.py:4 (def)")
            history = await session.call_tool("search", {"query": "why do uploads retry", "limit": 3})
            assert "commits:" in history.content[0].text and "Retry failed uploads" in history.content[0].text


def _session(argv: list[str], env: dict, cwd) -> list[dict]:
    """initialize, initialized, tools/list over raw stdio lines; every line the server wrote."""
    import json
    import subprocess

    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    with subprocess.Popen([*argv, "mcp"], env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        try:
            proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines))
            proc.stdin.flush()
            got = []
            while len([m for m in got if "id" in m]) < 2:
                line = proc.stdout.readline()
                assert line, proc.stderr.read()
                got.append(json.loads(line))
            rest, _err = proc.communicate(timeout=30)  # stdin closed: the server ends
            assert proc.returncode == 0 and rest == "", rest  # nothing after: no second answer to initialize
            return got
        finally:
            if proc.poll() is None:
                proc.kill()


def test_initialize_is_answered_from_the_sdks_own_recorded_answer_once_and_only_once(home, repo):  # noqa: F811
    first = _session(cli_argv(), home.env, str(repo))  # the SDK answers; its answer is recorded
    again = _session(cli_argv(), home.env, str(repo))  # answered from the record before the SDK loads
    assert [m["id"] for m in again] == [1, 2] and again[0] == first[0], (first, again)
    assert "search" in {t["name"] for t in again[1]["result"]["tools"]}
    assert (home.path / "mcp-initialize.json").stat().st_mode & 0o777 == 0o600
