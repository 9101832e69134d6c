"""The governed memory bank, driven by the official Python SDK: an agent
proposes over MCP, the operator reviews with `glovebox memory ...` while the
server runs (over its control socket), and only the approved entry reaches
new sessions."""

import json
import os
import subprocess
import time

import anyio

from conftest import stdio_client


def structured(result):
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def operator(glovebox_bin, config, *args):
    """`glovebox memory ARGS...` as the operator: (exit code, stdout, stderr)."""
    done = subprocess.run(
        [glovebox_bin, "--config", config, "memory", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout, done.stderr


def wait_for_control_socket(config):
    socket = os.path.join(os.path.dirname(config), "data", "control.sock")
    deadline = time.time() + 60
    while not os.path.exists(socket):
        assert time.time() < deadline, f"no control socket at {socket}"
        time.sleep(0.02)


def memory_texts(state):
    return [c["text"] for c in state["context"] if c["source"].startswith("memory:")]


def test_a_proposed_entry_reaches_new_sessions_only_after_memory_review_approves_it(glovebox_bin, config):
    lesson = "the mcp-memory project's reports are due on Fridays"

    async def main():
        async with stdio_client(glovebox_bin, config) as client:
            start = {"role": "workagent", "project": "mcp-memory"}
            assert not (await client.call_tool("session_start", start)).is_error
            proposed = await client.call_tool("memory_propose", {"scope": "project", "text": lesson})
            assert not proposed.is_error, proposed
            entry = structured(proposed)["entry"]
            assert entry["state"] == "proposed"

            before = structured(await client.call_tool("session_start", start))
            assert memory_texts(before) == []

            wait_for_control_socket(config)
            code, out, err = operator(glovebox_bin, config, "review", "--json")
            assert code == 0, err
            assert [e["id"] for e in json.loads(out) if e["text"] == lesson] == [entry["id"]]
            code, out, err = operator(glovebox_bin, config, "approve", entry["id"])
            assert code == 0, err
            assert json.loads(out)["approved"]["by"].startswith("cli:")

            after = structured(await client.call_tool("session_start", start))
            assert memory_texts(after) == [lesson]
            found = structured(await client.call_tool("memory_search", {"query": "reports Fridays"}))
            assert found["entries"][0]["id"] == entry["id"]

            # Outside the agent's scopes: refused, with the rule named.
            refused = await client.call_tool("memory_propose", {"scope": "user:someone-else", "text": "x"})
            assert refused.is_error
            assert "own scopes" in refused.content[0].text

    anyio.run(main)
