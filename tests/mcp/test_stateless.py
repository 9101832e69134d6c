"""Revision 2026-07-28, stateless, with the official Python SDK in its default mode.

The SDK probes `server/discover` and, offered 2026-07-28, speaks it: no
`initialize`, no MCP session, every request standing alone. A Glovebox
session is then named in each request's `_meta` (`io.glovebox/session`), or
the request runs in the principal's default session `mcp-default`; nothing
depends on which connection, or which server process, a request reaches.
"""

import json

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from conftest import http_server

MODERN = "2026-07-28"
SESSION = "io.glovebox/session"


def structured(result):
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def modern_stdio(glovebox_bin, config):
    params = StdioServerParameters(command=glovebox_bin, args=["--config", config, "serve"])
    return Client(params, read_timeout_seconds=60)


async def log_of(client, session):
    """The messages echoed in `session`, in order, read back from its log resource."""
    read = await client.read_resource(f"glovebox://sessions/{session}/log?limit=500")
    page = json.loads(read.contents[0].text)
    echoed = []
    for event in page["events"]:
        kind = event["kind"]
        if kind["type"] == "call_finished" and kind.get("output"):
            output = json.loads(kind["output"])
            if isinstance(output, dict) and "message" in output:
                echoed.append(output["message"])
    return echoed


def test_the_sdk_speaks_2026_07_28_and_calls_run_in_the_principal_s_default_session(glovebox_bin, config):
    async def main(client, word):
        assert client.protocol_version == MODERN
        tools = await client.list_tools()
        assert "echo.echo" in {t.name for t in tools.tools}
        echoed = await client.call_tool("echo.echo", {"message": f"{word} one"})
        assert structured(echoed)["message"] == f"{word} one", echoed
        status = structured(await client.call_tool("session_status", {"session": "mcp-default"}))
        assert status["name"] == "mcp-default" and status["status"] == "active", status
        return status["id"]

    async def over_stdio():
        async with modern_stdio(glovebox_bin, config) as client:
            return await main(client, "stdio")

    async def over_http(url):
        # Two connections, one after the other: the same default session.
        async with Client(url, read_timeout_seconds=60) as first:
            one = await main(first, "http")
        async with Client(url, read_timeout_seconds=60) as second:
            again = await second.call_tool("echo.echo", {"message": "http two"})
            assert not again.is_error, again
            assert await log_of(second, one) == ["stdio one", "http one", "http two"]
        return one

    stdio_default = anyio.run(over_stdio)
    with http_server(glovebox_bin, config) as url:
        assert anyio.run(over_http, url) == stdio_default


def test_a_session_named_in_meta_is_the_request_s_across_connections_and_restarts(glovebox_bin, config):
    async def start(url):
        async with Client(url, read_timeout_seconds=60) as client:
            started = structured(
                await client.call_tool("session_start", {"role": "workagent", "project": "mcp-tests", "name": "handle"})
            )
            # Nothing is bound: the answer says how to name it.
            assert SESSION in started["binding"] and started["id"] in started["binding"], started
            named = await client.call_tool("echo.echo", {"message": "named"}, meta={SESSION: started["id"]})
            assert not named.is_error, named
            # A request that names none still runs in the default session.
            await client.call_tool("echo.echo", {"message": "unnamed"})
            return started["id"]

    async def carry_on(url, id):
        async with Client(url, read_timeout_seconds=60) as client:
            # By name this time, from a new connection to a new process.
            again = await client.call_tool("echo.echo", {"message": "after restart"}, meta={SESSION: "handle"})
            assert not again.is_error, again
            assert await log_of(client, id) == ["named", "after restart"]
            status = structured(await client.call_tool("session_status", {}, meta={SESSION: id}))
            assert status["id"] == id and status["counters"]["calls"] == 2, status
            assert "unnamed" in await log_of(client, "mcp-default")
            # Ending needs the session named: none is refused and says how.
            unnamed = await client.call_tool("session_end", {})
            assert unnamed.is_error, unnamed
            error = structured(unnamed)["error"]
            assert error["kind"] == "no_session" and SESSION in error["message"], error
            ended = structured(await client.call_tool("session_end", {}, meta={SESSION: id}))
            assert ended["id"] == id and ended["status"] == "completed", ended

    with http_server(glovebox_bin, config) as url:
        id = anyio.run(start, url)
    with http_server(glovebox_bin, config) as url:
        anyio.run(carry_on, url, id)


def test_a_bad_or_unknown_session_in_meta_is_refused_and_nothing_runs(glovebox_bin, config):
    async def main():
        async with modern_stdio(glovebox_bin, config) as client:
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("echo.echo", {"message": "lost"}, meta={SESSION: "nobody-has-this"})
            assert unknown.value.error.code == -32602, unknown.value.error
            assert SESSION in unknown.value.error.message and "nobody-has-this" in unknown.value.error.message
            with pytest.raises(MCPError) as bad:
                await client.call_tool("echo.echo", {"message": "lost"}, meta={SESSION: 7})
            assert bad.value.error.code == -32602 and SESSION in bad.value.error.message, bad.value.error
            assert "lost" not in await log_of(client, "mcp-default")

    anyio.run(main)
