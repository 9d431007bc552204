"""`plugkit mcp` driven by the MCP SDK's own client over stdio: the real CLI as the server,
the real runner behind it, a real git repository as the workspace."""

import pytest

from tests.e2e.test_cli_search import repo  # noqa: F401 - the same known repository
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
