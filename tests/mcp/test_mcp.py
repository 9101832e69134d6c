"""Glovebox over MCP, driven by the official Python SDK (`mcp` 2.x)."""

import json

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from conftest import http_server, stdio_client

BUILTINS = {
    "session_start",
    "session_resume",
    "session_status",
    "session_handoff",
    "session_end",
    "job_spawn",
    "job_wait",
    "job_status",
    "job_cancel",
    "job_list",
}


def structured(result):
    """The structured content of a tool result, or the JSON of its first text block."""
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def list_and_call(client):
    tools = await client.list_tools()
    names = {t.name for t in tools.tools}
    assert {"echo.echo", "text.upper", "files.write"} <= names, names
    assert BUILTINS <= names, BUILTINS - names
    echo = next(t for t in tools.tools if t.name == "echo.echo")
    assert echo.input_schema["type"] == "object"
    result = await client.call_tool("echo.echo", {"message": "hello over mcp"})
    assert not result.is_error, result
    assert structured(result)["message"] == "hello over mcp"


def test_stdio_lists_tools_and_calls_one(glovebox_bin, config):
    async def main():
        async with stdio_client(glovebox_bin, config) as client:
            await list_and_call(client)

    anyio.run(main)


def test_http_lists_tools_and_calls_one(glovebox_bin, config):
    async def main(url):
        from mcp import Client

        async with Client(url, read_timeout_seconds=60, mode="legacy") as client:
            await list_and_call(client)

    with http_server(glovebox_bin, config) as url:
        anyio.run(main, url)


def test_a_denied_call_carries_the_hook_reason_and_alternatives(glovebox_bin, config):
    async def main():
        async with stdio_client(glovebox_bin, config) as client:
            started = await client.call_tool(
                "session_start", {"role": "workagent", "project": "mcp-tests", "name": "denied-worker"}
            )
            assert not started.is_error, started
            # word-count costs 9.00 in this config; a workagent's limit is 5.00.
            result = await client.call_tool("text.word-count", {"text": "one two three"})
            assert result.is_error
            denied = structured(result)["denied"]
            assert denied["hook"] == "cost-control"
            assert "5.00" in denied["reason"]
            assert len(denied["alternatives"]) >= 3
            text = result.content[0].text
            assert "cost-control" in text and "alternatives" in text

    anyio.run(main)


def test_bad_requests_get_mcp_errors(glovebox_bin, config):
    async def main():
        async with stdio_client(glovebox_bin, config) as client:
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("nope.nothing", {})
            assert "nope.nothing" in str(unknown.value)
            with pytest.raises(MCPError) as bad:
                await client.call_tool("text.upper", {"txt": "typo"})
            assert "schema" in str(bad.value)
            # The server is still serving.
            ok = await client.call_tool("echo.echo", {"message": "still here"})
            assert structured(ok)["message"] == "still here"

    anyio.run(main)


def test_jobs_spawn_in_parallel_and_wait_with_a_timeout(glovebox_bin, config):
    async def main():
        async with stdio_client(glovebox_bin, config) as client:
            await client.call_tool("session_start", {"role": "workagent", "project": "mcp-tests", "name": "jobs-lead"})
            ids = []
            for i in range(4):
                spawned = await client.call_tool("job_spawn", {"tool": "text.upper", "input": {"text": f"part {i}"}})
                assert not spawned.is_error, spawned
                ids.append(structured(spawned)["id"])
            waited = structured(await client.call_tool("job_wait", {"ids": ids, "mode": "all", "timeout_ms": 30000}))
            assert not waited["timed_out"], waited
            outputs = sorted(j["result"]["output"]["text"] for j in waited["done"])
            assert outputs == ["PART 0", "PART 1", "PART 2", "PART 3"]
            listed = structured(await client.call_tool("job_list", {}))
            assert len(listed["jobs"]) >= 4
            # A wait that cannot finish returns at its timeout with the job pending.
            slow = structured(
                await client.call_tool("job_spawn", {"tool": "sleep.sleep", "input": {"seconds": 30}})
            )["id"]
            waited = structured(await client.call_tool("job_wait", {"ids": [slow], "timeout_ms": 300}))
            assert waited["timed_out"] and waited["pending"][0]["id"] == slow
            cancelled = structured(await client.call_tool("job_cancel", {"id": slow}))
            assert cancelled["status"] == "cancelled"

    anyio.run(main)


def test_a_session_s_log_and_a_job_are_resources_the_sdk_lists_and_reads(glovebox_bin, config):
    async def main(client, name):
        started = structured(
            await client.call_tool("session_start", {"role": "workagent", "project": "mcp-tests", "name": name})
        )
        assert "id" in started, started
        await client.call_tool("session_note", {"text": "a note to read back"})
        job = structured(await client.call_tool("job_spawn", {"tool": "text.upper", "input": {"text": "res"}}))["id"]
        await client.call_tool("job_wait", {"ids": [job], "timeout_ms": 30000})
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == [
            "glovebox://sessions/{session}/log{?from_seq,limit}",
            "glovebox://sessions/{session}/files/{+path}{?offset,cursor}",
            "glovebox://sessions/{session}/outputs/{call}{?offset}",
            "glovebox://jobs/{id}",
        ]
        listed = await client.list_resources()
        log = f"glovebox://sessions/{started['id']}/log"
        assert log in [str(r.uri) for r in listed.resources], listed
        read = await client.read_resource(log + "?limit=500")
        page = json.loads(read.contents[0].text)
        assert any("a note to read back" in json.dumps(e) for e in page["events"]), page
        first = json.loads((await client.read_resource(log + "?from_seq=1&limit=1")).contents[0].text)
        assert [e["seq"] for e in first["events"]] == [1] and first["next_seq"] == 2, first
        shown = json.loads((await client.read_resource(f"glovebox://jobs/{job}")).contents[0].text)
        assert shown["status"] == "completed" and shown["result"]["output"]["text"] == "RES", shown
        with pytest.raises(MCPError) as refused:
            await client.read_resource("glovebox://jobs/job-000000000000")
        assert refused.value.error.code == -32002, refused.value.error

    async def over_stdio():
        async with stdio_client(glovebox_bin, config) as client:
            await main(client, "read-me-stdio")

    async def over_http(url):
        from mcp import Client

        async with Client(url, read_timeout_seconds=60, mode="legacy") as client:
            await main(client, "read-me-http")

    anyio.run(over_stdio)
    with http_server(glovebox_bin, config) as url:
        anyio.run(over_http, url)


def test_a_session_resumes_by_name_after_a_server_restart(glovebox_bin, config):
    async def first():
        async with stdio_client(glovebox_bin, config) as client:
            await client.call_tool("session_start", {"role": "workagent", "project": "mcp-tests", "name": "survivor"})
            await client.call_tool("echo.echo", {"message": "before the restart"})
            handed = await client.call_tool(
                "session_handoff",
                {
                    "kind": "continuation",
                    "objective": "finish the report",
                    "work_completed": ["outline"],
                    "current_phase": "drafting",
                    "next_steps": ["write section 2"],
                },
            )
            assert not handed.is_error, handed

    async def second():
        async with stdio_client(glovebox_bin, config) as client:
            resumed = structured(await client.call_tool("session_resume", {"session": "survivor"}))
            assert resumed["state"]["name"] == "survivor"
            assert resumed["latest_handoff"]["handoff"]["next_steps"] == ["write section 2"]
            # Calls now run in the resumed session.
            await client.call_tool("echo.echo", {"message": "after the restart"})
            status = structured(await client.call_tool("session_status", {}))
            assert status["name"] == "survivor"
            assert status["counters"]["calls"] == 2

    anyio.run(first)
    anyio.run(second)


def test_threat_46_a_call_in_flight_at_sigterm_still_answers(glovebox_bin, config):
    """SIGTERM: the server takes nothing new, lets the call in flight finish
    and answer, then exits cleanly; its log says the call finished."""
    import signal
    import subprocess

    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from conftest import start_http_server

    proc, url = start_http_server(glovebox_bin, config)
    try:

        async def main():
            async with Client(streamable_http_client(url), read_timeout_seconds=60, mode="legacy") as client:
                await client.call_tool("session_start", {"role": "workagent", "project": "mcp-tests", "name": "draining"})
                answer = {}

                async def slow_call():
                    answer["result"] = await client.call_tool("sleep.sleep", {"seconds": 2})

                def started():
                    log = subprocess.run(
                        [glovebox_bin, "--config", config, "log", "export", "draining"],
                        capture_output=True,
                        text=True,
                    ).stdout
                    return '"call_started"' in log

                async with anyio.create_task_group() as tg:
                    tg.start_soon(slow_call)
                    # SIGTERM once the call runs (the log says so, read
                    # through the server's control socket), not before.
                    with anyio.fail_after(30):
                        while not await anyio.to_thread.run_sync(started):
                            await anyio.sleep(0.05)
                    proc.send_signal(signal.SIGTERM)
                result = answer["result"]
                assert not result.is_error, result

        try:
            anyio.run(main)
        except BaseException:
            # What the server said while it drained, beside the client's error.
            proc.kill()
            proc.wait()
            print(proc.stderr.read().decode())
            raise
        assert proc.wait(timeout=30) == 0, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # The call finished in the log, not interrupted.
    exported = subprocess.run(
        [glovebox_bin, "--config", config, "log", "export", "draining"], capture_output=True, text=True, check=True
    ).stdout
    assert '"call_finished"' in exported and '"call_interrupted"' not in exported, exported


def test_threat_46_a_call_waiting_for_approval_at_sigterm_answers_at_once(glovebox_bin, config):
    """SIGTERM while a client waits for an operator's approval: the wait ends
    at once with "awaiting approval" (the approval stays pending for the next
    start), and the server exits well within its 30 s drain."""
    import os
    import signal
    import subprocess
    import time

    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from conftest import start_http_server

    # The same config, with calls waiting up to five minutes for an operator.
    waiting = os.path.join(os.path.dirname(config), "waiting.toml")
    with open(config) as f:
        text = f.read()
    assert "wait = 0" in text
    with open(waiting, "w") as f:
        f.write(text.replace("wait = 0", 'wait = "5m"'))

    proc, url = start_http_server(glovebox_bin, waiting)
    try:

        async def main():
            async with Client(streamable_http_client(url), read_timeout_seconds=60, mode="legacy") as client:
                await client.call_tool("session_start", {"role": "workagent", "project": "mcp-tests", "name": "waiting-at-stop"})
                answer = {}

                async def waiting_call():
                    answer["result"] = await client.call_tool("files.write", {"path": "/data/at-stop.txt", "content": "x"})

                def pending():
                    listed = subprocess.run(
                        [glovebox_bin, "--config", waiting, "approvals"],
                        capture_output=True,
                        text=True,
                    ).stdout
                    return "files.write" in listed

                async with anyio.create_task_group() as tg:
                    tg.start_soon(waiting_call)
                    with anyio.fail_after(30):
                        while not await anyio.to_thread.run_sync(pending):
                            await anyio.sleep(0.05)
                    answer["signalled"] = time.monotonic()
                    proc.send_signal(signal.SIGTERM)
                result = answer["result"]
                assert result.is_error, result
                assert "awaiting_approval" in (result.structured_content or {}), result
                return answer["signalled"]

        signalled = anyio.run(main)
        assert proc.wait(timeout=30) == 0, proc.stderr.read().decode()
        assert time.monotonic() - signalled < 15, "the drain waited for the approval"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # The approval is still pending, for an operator after the restart.
    listed = subprocess.run([glovebox_bin, "--config", waiting, "approvals"], capture_output=True, text=True, check=True)
    assert "files.write" in listed.stdout, listed.stdout
