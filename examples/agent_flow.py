"""A scripted agent flow against Glovebox over MCP (the official Python SDK).

An orchestrator hands a task to a supervisor; the supervisor hands parts of it to
workagents, which run as parallel background jobs; the supervisor waits for them
with a timeout, integrates the results and hands back to the orchestrator. On the
way, a destructive call is stopped by the `destructive` permission hook.

Run it with `bash examples/agent_flow.sh` (it starts the server on the example
config as an agent principal of its own, and installs the SDK into a
virtualenv), or against a running server, with the token of an agent principal
that may act as orchestrator and supervisor in project `demo`:

    GLOVEBOX_TOKEN=gbx_... python examples/agent_flow.py http://127.0.0.1:8765/mcp
"""

import json
import os
import sys
import time

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def connect(url):
    """A client for `url`, with the principal's token when one is given.

    The 2025-11-25 lifecycle (`mode="legacy"`): each connection binds the
    session it starts. Under 2026-07-28 a client names the session in each
    request's `_meta` instead (docs/agents.md)."""
    token = os.environ.get("GLOVEBOX_TOKEN")
    if not token:
        return Client(url, mode="legacy")
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(url, http_client=http), mode="legacy")


def data(result):
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def call(client, tool, args):
    result = await client.call_tool(tool, args)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content[0].text}")
    return data(result)


async def main(url):
    chapters = {
        "intro": "Agents run for hours and call tools that touch real systems.",
        "hands": "Every tool runs in a fresh sandbox with only the grants it was given.",
        "logs": "Every call is logged durably so a session resumes after a crash.",
    }
    # Names are unique among live sessions: make this run's names unique.
    run = int(time.time())
    sup_name, orch_name = f"flow-supervisor-{run}", f"flow-orchestrator-{run}"
    async with connect(url) as orchestrator, connect(url) as supervisor:
        # Each connection binds its own session.
        await call(supervisor, "session_start", {"role": "supervisor", "project": "demo", "name": sup_name})
        await call(orchestrator, "session_start", {"role": "orchestrator", "project": "demo", "name": orch_name})
        await call(
            orchestrator,
            "session_handoff",
            {
                "kind": "orchestrator_to_supervisor",
                "to": sup_name,
                "objective": "summarize the three chapters",
                "success_criteria": ["one line per chapter, upper-cased"],
                "next_steps": ["split the work across workagents", "integrate the results"],
            },
        )
        print("orchestrator -> supervisor: handoff written")

        # The supervisor picks up its handoff, as an agent with no memory would.
        resumed = await call(supervisor, "session_resume", {"session": sup_name})
        print("supervisor resumed with:", resumed["latest_handoff"]["handoff"]["objective"])

        # Workagents: parallel background jobs, one per chapter.
        jobs = {}
        for name, text in chapters.items():
            spawned = await call(supervisor, "job_spawn", {"tool": "text.upper", "input": {"text": text}})
            jobs[spawned["id"]] = name
        waited = await call(supervisor, "job_wait", {"ids": list(jobs), "mode": "all", "timeout_ms": 20000})
        if waited["timed_out"]:
            raise RuntimeError(f"workagents still running: {[j['id'] for j in waited['pending']]}")
        summary = {jobs[j["id"]]: j["result"]["output"]["text"] for j in waited["done"]}
        for name in chapters:
            print(f"  {name}: {summary[name]}")

        # A destructive call: the hook asks a human, and the call waits (up to
        # `[approvals] wait`) for an operator, who approves it from a second
        # terminal: `glovebox approvals`, then `glovebox approve ID`.
        print("destructive write: waiting for an operator (glovebox approvals; glovebox approve ID)")
        written = await supervisor.call_tool(
            "files.write", {"path": "/data/summary.txt", "content": "\n".join(summary.values())}
        )
        if written.is_error:
            raise RuntimeError(f"the destructive write was not approved: {written.content}")
        print(f"an operator approved it: {data(written)['written']} bytes written to /data/summary.txt")

        # The supervisor hands the result back to the orchestrator.
        await call(
            supervisor,
            "session_handoff",
            {
                "kind": "supervisor_to_orchestrator",
                "to": orch_name,
                "objective": "summarize the three chapters",
                "work_completed": [f"{k}: {v}" for k, v in summary.items()],
                "current_phase": "integrated",
                "files": ["/data/summary.txt"],
            },
        )
        resumed = await call(orchestrator, "session_resume", {"session": orch_name})
        print("orchestrator resumed with:", resumed["latest_handoff"]["handoff"]["work_completed"][0])
        status = await call(orchestrator, "session_status", {})
        print(f"orchestrator session `{status['name']}` is {status['status']}: flow complete")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8765/mcp")
