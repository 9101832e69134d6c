"""Principals over HTTP, driven by the official Python SDK: tokens, and two
agents that cannot touch each other's sessions and jobs.

Each test declares its principals with the real `glovebox principal add` in a
config of its own (beside GLOVEBOX_CONFIG, with a data dir of its own).
"""

import json
import re
import subprocess
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from conftest import http_server

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


def structured(result):
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def add(glovebox_bin, config, name, *args):
    out = subprocess.run(
        [glovebox_bin, "--config", config, "principal", "add", name, *args],
        capture_output=True,
        text=True,
        check=True,
    )
    token = out.stdout.strip()
    assert re.fullmatch(r"gbx_[0-9a-f]{64}", token), out
    # Only its hash is kept.
    assert token not in Path(config).read_text()
    return token


@pytest.fixture
def principals(glovebox_bin, config):
    """A config with agents `alice` and `bob` (workagents in demo and mcp)."""
    base = Path(config)
    mine = base.with_name(f"principals-{uuid.uuid4().hex[:8]}.toml")
    text = base.read_text().replace('data_dir = "data"', f'data_dir = "data-{mine.stem}"')
    mine.write_text("# principals under test\n" + text)
    tokens = {
        name: add(glovebox_bin, str(mine), name, "--kind", "agent", "--roles", "workagent", "--projects", "demo,mcp")
        for name in ("alice", "bob")
    }
    assert mine.read_text().startswith("# principals under test\n")
    return str(mine), tokens


def client(url, token, mode="legacy"):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60, mode=mode)


def post(url, body, token=None, session=None):
    """A raw POST: (status, headers, body)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if session is not None:
        headers["Mcp-Session-Id"] = session
        headers["Mcp-Protocol-Version"] = "2025-06-18"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def test_http_needs_a_principals_token_on_every_request(glovebox_bin, principals):
    config, tokens = principals
    with http_server(glovebox_bin, config) as url:
        # No token, a wrong one, a near miss: 401 with nothing in it.
        for token in (None, "gbx_" + "0" * 64, tokens["alice"][:-1], ""):
            status, headers, body = post(url, INIT, token)
            assert (status, body) == (401, b""), (token, status, body)
            assert headers.get("WWW-Authenticate") == "Bearer"
        status, headers, _ = post(url, INIT, tokens["alice"])
        assert status == 200
        session = headers["Mcp-Session-Id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        # Every later request needs it too.
        assert post(url, initialized, None, session)[0] == 401
        # Another principal cannot use alice's MCP session: it is unknown to bob.
        assert post(url, initialized, tokens["bob"], session)[0] == 404
        assert post(url, initialized, tokens["alice"], session)[0] == 202


def test_a_second_agent_cannot_touch_the_first_ones_sessions_and_jobs(glovebox_bin, principals):
    config, tokens = principals

    async def main(url):
        async with client(url, tokens["alice"]) as alice, client(url, tokens["bob"]) as bob:
            started = structured(
                await alice.call_tool("session_start", {"role": "workagent", "project": "demo", "name": "alice-work"})
            )
            alice_id = started["id"]
            job = structured(await alice.call_tool("job_spawn", {"tool": "sleep.sleep", "input": {"seconds": 30}}))["id"]
            await bob.call_tool("session_start", {"role": "workagent", "project": "demo", "name": "bob-work"})

            async def refused(tool, args, kind):
                result = await bob.call_tool(tool, args)
                assert result.is_error, (tool, args, result)
                error = structured(result)["error"]
                assert error["kind"] == kind, (tool, args, error)
                return error["message"]

            # Another's session, by name or id, is answered as one that does not exist.
            for key in ("alice-work", alice_id):
                message = await refused("session_status", {"session": key}, "session_not_found")
                absent = await refused("session_status", {"session": "no-such-session"}, "session_not_found")
                assert message == absent.replace("no-such-session", key)
                await refused("session_resume", {"session": key}, "session_not_found")
                await refused("job_list", {"session": key}, "session_not_found")
                handoff = {"kind": "continuation", "objective": "take over", "to": key}
                message = await refused("session_handoff", handoff, "bad_handoff")
                assert "no session with the id or name" in message
            # Another's job: not found, like a job that does not exist.
            for tool, args in (
                ("job_status", {"id": job}),
                ("job_cancel", {"id": job}),
                ("job_wait", {"ids": [job], "timeout_ms": 100}),
            ):
                message = await refused(tool, args, "job_not_found")
                assert job in message
            listed = structured(await bob.call_tool("job_list", {}))["jobs"]
            assert all(j["session"] != alice_id for j in listed), listed
            # Nothing of alice's changed: her job still runs, her session is hers.
            status = structured(await alice.call_tool("job_status", {"id": job}))
            assert status["status"] in ("queued", "running"), status
            mine = structured(await alice.call_tool("session_status", {}))
            assert mine["id"] == alice_id and mine["owner"] == "alice" and mine["handoffs"] == 0
            cancelled = structured(await alice.call_tool("job_cancel", {"id": job}))
            assert cancelled["status"] == "cancelled"

    with http_server(glovebox_bin, config) as url:
        anyio.run(main, url)


def test_a_role_above_the_ceiling_or_another_project_is_refused(glovebox_bin, principals):
    config, tokens = principals

    async def main(url):
        async with client(url, tokens["alice"]) as alice:
            for args, words in (
                ({"role": "orchestrator", "project": "demo"}, "above this principal's ceiling (workagent)"),
                ({"role": "supervisor", "project": "demo"}, "above this principal's ceiling (workagent)"),
                ({"role": "workagent", "project": "payroll"}, "project `payroll`"),
            ):
                result = await alice.call_tool("session_start", {**args, "name": "escalated"})
                assert result.is_error, result
                error = structured(result)["error"]
                assert error["kind"] == "not_allowed" and words in error["message"], error
            # Within the ceiling, the same name is free: nothing was started.
            ok = await alice.call_tool("session_start", {"role": "workagent", "project": "demo", "name": "escalated"})
            assert not ok.is_error, ok

    with http_server(glovebox_bin, config) as url:
        anyio.run(main, url)


def test_an_agent_cannot_lift_a_pause_the_host_took(glovebox_bin, principals):
    config, tokens = principals

    async def main(url):
        async with client(url, tokens["alice"]) as alice:
            await alice.call_tool("session_start", {"role": "workagent", "project": "demo", "name": "careful"})
            # The destructive hook asks a human: the host pauses the session.
            waiting = await alice.call_tool("files.write", {"path": "/data/x.txt", "content": "x"})
            assert "awaiting_approval" in structured(waiting), waiting
            result = await alice.call_tool("session_resume", {"session": "careful"})
            assert result.is_error, result
            error = structured(result)["error"]
            assert error["kind"] == "not_allowed" and "only an operator" in error["message"], error
            status = structured(await alice.call_tool("session_status", {}))
            assert status["status"] == "paused", status

    with http_server(glovebox_bin, config) as url:
        anyio.run(main, url)


def test_a_connections_default_session_is_paused_when_the_client_goes_away(glovebox_bin, principals):
    config, tokens = principals

    async def main(url):
        async with client(url, tokens["alice"]) as alice:
            assert not (await alice.call_tool("echo.echo", {"message": "hi"})).is_error
            state = structured(await alice.call_tool("session_status", {}))
            assert state["status"] == "active" and state["name"].startswith("mcp-"), state
            name = state["name"]
        # The client ended its MCP session: the default session is paused, saying why.
        async with client(url, tokens["alice"]) as alice:
            for _ in range(100):
                listed = structured(await alice.call_tool("session_list", {"status": "paused"}))["sessions"]
                if any(s["name"] == name for s in listed):
                    break
                await anyio.sleep(0.1)
            else:
                raise AssertionError(f"{name} was not paused: {listed}")
            last = structured(await alice.call_tool("session_log", {"session": name}))["events"][-1]
            assert last["kind"]["type"] == "paused" and "went away" in last["kind"]["reason"], last
            # Its owner may carry on with it.
            resumed = structured(await alice.call_tool("session_resume", {"session": name}))
            assert resumed["state"]["status"] == "active", resumed

    with http_server(glovebox_bin, config) as url:
        anyio.run(main, url)


def edit_principal(config, name, edit):
    """Rewrites principal `name`'s `[[principal]]` table with `edit` (None drops it)."""
    head, *tables = Path(config).read_text().split("[[principal]]")
    kept = []
    for table in tables:
        if f'name = "{name}"' in table:
            table = edit(table)
        if table is not None:
            kept.append(table)
    Path(config).write_text("[[principal]]".join([head, *kept]))


def reload(glovebox_bin, config):
    subprocess.run([glovebox_bin, "--config", config, "reload"], check=True, capture_output=True)


def test_threat_52_a_reload_reaches_an_open_sdk_client_and_a_removed_principal_is_cut_off(glovebox_bin, principals):
    # Threat 52: an open connection kept the principal it had when it opened,
    # across reloads that demoted or removed it.
    config, tokens = principals

    def narrow(table):
        assert 'projects = ["demo", "mcp"]' in table, table
        return table.replace('projects = ["demo", "mcp"]', 'projects = ["mcp"]')

    async def main(url):
        alice = client(url, tokens["alice"])
        await alice.__aenter__()
        try:
            ok = await alice.call_tool("session_start", {"role": "workagent", "project": "demo"})
            assert not ok.is_error, ok
            # Demoted: the open client's next call has its new projects.
            edit_principal(config, "alice", narrow)
            reload(glovebox_bin, config)
            refused = await alice.call_tool("session_start", {"role": "workagent", "project": "demo"})
            assert refused.is_error and "project `demo`" in structured(refused)["error"]["message"], refused
            # Removed: its MCP session ends; the client's next call fails.
            edit_principal(config, "alice", lambda table: None)
            reload(glovebox_bin, config)
            with pytest.raises(Exception) as cut_off:
                with anyio.fail_after(30):
                    await alice.call_tool("session_status", {})
            # The SDK reports the 401 its request got.
            assert "error response" in str(cut_off.value), repr(cut_off.value)
        finally:
            try:
                await alice.__aexit__(None, None, None)
            except Exception:  # its session is gone: closing it may fail
                pass
        assert post(url, INIT, tokens["alice"])[0] == 401
        async with client(url, tokens["bob"]) as bob:
            assert not (await bob.call_tool("session_list", {})).is_error


def test_threat_53_two_agents_use_one_name_and_neither_learns_of_the_other(glovebox_bin, principals):
    """Names are scoped by owner: bob's `shared` is not alice's business, and
    starting her own `shared` neither fails nor tells her his id (it used
    to: `NameTaken` named the holder)."""
    config, tokens = principals

    async def main(url):
        async with client(url, tokens["alice"]) as alice, client(url, tokens["bob"]) as bob:
            theirs = structured(
                await bob.call_tool("session_start", {"role": "workagent", "project": "demo", "name": "shared"})
            )["id"]
            result = await alice.call_tool("session_status", {"session": "shared"})
            assert result.is_error and structured(result)["error"]["kind"] == "session_not_found", result
            started = await alice.call_tool("session_start", {"role": "workagent", "project": "demo", "name": "shared"})
            assert not started.is_error, started
            mine = structured(started)["id"]
            assert mine != theirs and theirs not in json.dumps(structured(started))
            assert structured(await alice.call_tool("session_status", {"session": "shared"}))["id"] == mine
            assert structured(await bob.call_tool("session_status", {"session": "shared"}))["id"] == theirs
            # Within one owner a live name stays one session's.
            again = await alice.call_tool("session_start", {"role": "workagent", "project": "demo", "name": "shared"})
            assert again.is_error and structured(again)["error"]["kind"] == "session_name_taken", again
            assert theirs not in json.dumps(structured(again))

    with http_server(glovebox_bin, config) as url:
        anyio.run(main, url)


def test_under_2026_07_28_a_session_in_meta_is_an_authorised_handle_and_defaults_are_per_principal(
    glovebox_bin, principals
):
    """Stateless requests name their session in `_meta`: bob cannot run in
    alice's by naming it (by id or name: refused as unknown, nothing runs),
    and each principal's unnamed requests run in a default session of its own."""
    config, tokens = principals
    meta = "io.glovebox/session"

    async def main(url):
        async with client(url, tokens["alice"], "auto") as alice, client(url, tokens["bob"], "auto") as bob:
            assert alice.protocol_version == bob.protocol_version == "2026-07-28"
            started = structured(
                await alice.call_tool("session_start", {"role": "workagent", "project": "demo", "name": "alice-handle"})
            )
            ran = await alice.call_tool("echo.echo", {"message": "alice"}, meta={meta: started["id"]})
            assert not ran.is_error, ran
            for key in (started["id"], "alice-handle"):
                with pytest.raises(MCPError) as refused:
                    await bob.call_tool("echo.echo", {"message": "bob"}, meta={meta: key})
                assert refused.value.error.code == -32602 and key in refused.value.error.message, refused.value.error
            await alice.call_tool("echo.echo", {"message": "alice default"})
            await bob.call_tool("echo.echo", {"message": "bob default"})
            hers = structured(await alice.call_tool("session_status", {"session": "mcp-default"}))
            his = structured(await bob.call_tool("session_status", {"session": "mcp-default"}))
            assert hers["id"] != his["id"] and hers["owner"] == "alice" and his["owner"] == "bob", (hers, his)
            assert structured(await alice.call_tool("session_status", {}, meta={meta: started["id"]}))["counters"][
                "calls"
            ] == 1

    with http_server(glovebox_bin, config) as url:
        anyio.run(main, url)


def test_threat_49_session_list_is_paginated_with_limit_and_next_cursor(glovebox_bin, principals):
    """`session_list` answers a page (newest first) and `next_cursor`; the
    pages hold every one of the agent's sessions once, and none of another's."""
    config, tokens = principals

    async def main(url):
        async with client(url, tokens["alice"]) as alice, client(url, tokens["bob"]) as bob:
            await bob.call_tool("session_start", {"role": "workagent", "project": "demo", "name": "bobs"})
            ids = []
            for i in range(5):
                started = await alice.call_tool("session_start", {"role": "workagent", "project": "demo", "name": f"p{i}"})
                ids.append(structured(started)["id"])
            seen, cursor = [], None
            while True:
                args = {"limit": 2} if cursor is None else {"limit": 2, "cursor": cursor}
                page = structured(await alice.call_tool("session_list", args))
                assert len(page["sessions"]) <= 2, page
                seen += [s["id"] for s in page["sessions"]]
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert seen == list(reversed(ids)), (seen, ids)
            # Without `limit`, one page of up to 100 and no cursor.
            whole = structured(await alice.call_tool("session_list", {}))
            assert [s["id"] for s in whole["sessions"]] == seen and whole["next_cursor"] is None
            # A limit past 500, or a cursor from elsewhere, is refused saying why.
            with pytest.raises(MCPError) as bad:
                await alice.call_tool("session_list", {"limit": 501})
            assert "`limit` is 501" in str(bad.value) and "500" in str(bad.value)
            result = await alice.call_tool("session_list", {"cursor": "nonsense"})
            assert result.is_error, result
            error = structured(result)["error"]
            assert "is not one of this listing's" in error["message"], error

    with http_server(glovebox_bin, config) as url:
        anyio.run(main, url)
