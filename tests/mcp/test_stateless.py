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


def client_approver_config(config):
    """The suite's config with agent `carol`, who settles her own approvals
    (`approve_by = "client"`), served over stdio `--as carol`."""
    import os

    path = os.path.join(os.path.dirname(config), "carol.toml")
    with open(config) as f:
        text = f.read().replace('data_dir = "data"', 'data_dir = "data-carol"')
    with open(path, "w") as f:
        f.write(
            text
            + '\n[[principal]]\nname = "carol"\nkind = "agent"\ncredential = "sha256:'
            + "0" * 64
            + '"\nroles = ["workagent"]\nprojects = ["mcp", "mcp-tests"]\napprove_by = "client"\n'
        )
    return path


def test_an_ask_reaches_the_client_as_input_required_and_runs_once_approved(glovebox_bin, config):
    """The destructive hook asks about a write. Under 2026-07-28 the call
    answers `input_required` with the approval as the approver must see it
    (the exact input and its SHA-256); the SDK puts it to its elicitation
    callback and calls again with the answer: approved, it runs once;
    declined, it is denied and nothing is written."""
    import os
    import re

    from mcp_types import ElicitResult

    carol = client_approver_config(config)
    asked = []

    def connect(answer):
        async def on_elicit(context, params):
            asked.append(params.message)
            return ElicitResult(action=answer, content={"approve": True} if answer == "accept" else None)

        params = StdioServerParameters(command=glovebox_bin, args=["--config", carol, "serve", "--as", "carol"])
        return Client(params, read_timeout_seconds=60, elicitation_callback=on_elicit)

    work = os.path.join(os.path.dirname(config), "work")

    async def main():
        async with connect("accept") as client:
            assert client.protocol_version == MODERN
            args = {"path": "/data/approved.txt", "content": "approved through input_required"}
            result = await client.call_tool("files.write", args)
            assert not result.is_error, result
            assert len(asked) == 1 and "files.write" in asked[0], asked
            # The approver saw the exact input, and the SHA-256 the approval records.
            assert '"/data/approved.txt"' in asked[0] and "approved through input_required" in asked[0], asked
            id = re.search(r"\(approval ([^)]+)\)\?$", asked[0]).group(1)
            approval = structured(await client.call_tool("approval_status", {"id": id}))
            assert approval["input_hash"] in asked[0] and approval["status"]["state"] == "approved", approval
        with open(os.path.join(work, "approved.txt")) as f:
            assert f.read() == "approved through input_required"
        async with connect("decline") as client:
            result = await client.call_tool("files.write", {"path": "/data/declined.txt", "content": "no"})
            assert result.is_error and "declined by the client's user (MCP input_required)" in result.content[0].text
        assert not os.path.exists(os.path.join(work, "declined.txt"))
        assert len(asked) == 2

    anyio.run(main)


def test_stateless_requests_hold_no_mcp_session_slots(glovebox_bin, config):
    """A 2026-07-28 request opens no MCP session, so it takes none of the
    principal's `mcp_sessions_per_principal`: with a cap of 1, eight calls
    at once all run."""
    import os

    capped = os.path.join(os.path.dirname(config), "capped.toml")
    with open(config) as f:
        text = f.read().replace('data_dir = "data"', 'data_dir = "data-capped"')
    with open(capped, "w") as f:
        f.write(text + "\n[quotas]\nmcp_sessions_per_principal = 1\n")

    async def main(url):
        async with Client(url, read_timeout_seconds=60) as client:
            assert client.protocol_version == MODERN
            results = []

            async def one(i):
                results.append(await client.call_tool("echo.echo", {"message": f"at once {i}"}))

            async with anyio.create_task_group() as tg:
                for i in range(8):
                    tg.start_soon(one, i)
            assert len(results) == 8 and not any(r.is_error for r in results), results

    with http_server(glovebox_bin, capped) as url:
        anyio.run(main, url)
