"""The supervisor flow: workagents as child sessions, completion gates and a judge.

A supervisor writes three chapters and an output schema, and spawns three
workagent children, each with a task (count the words of one chapter, write the
count as JSON) and a completion condition written before the work starts: a
gate (`gate.json_schema`: the child's output must match the schema) and, from
the operator's config, a judge. Each child works and posts its completion
handoff to the supervisor, whose `session_wait` returns all three reports. One
child writes its count as text: its `session_end completed` is refused with the
gate's output until it fixes the file and hands off again. A judge, a session of
another principal, recounts every chapter itself and passes each child's latest
handoff; only then does each child end `completed`. `glovebox billing --by
family` (flow.sh) then shows the children under their parent.

Run it with `bash examples/supervisor/flow.sh` (it starts the server on
examples/supervisor/glovebox.toml with two principals, and installs the SDK into
a virtualenv), or against a running server with the tokens of an agent
principal that may act as supervisor and workagent in project `demo`
(LEAD_TOKEN) and of one with the role `judge` in that project (JUDGE_TOKEN):

    LEAD_TOKEN=gbx_... JUDGE_TOKEN=gbx_... python examples/supervisor/flow.py http://127.0.0.1:8766/mcp

It prints one line per step, and the supervisor's session name last
(`supervisor: NAME`), for the billing report.
"""

import json
import os
import sys
import time

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

CHAPTERS = {
    "w1": "Agents run for hours and call tools that touch real systems.",
    "w2": "Every tool runs in a fresh sandbox with only the grants it was given by the operator.",
    "w3": "Every call is logged durably, so a session resumes after a crash.",
}

SCHEMA = {
    "type": "object",
    "required": ["chapter", "words"],
    "properties": {
        "chapter": {"type": "string"},
        "words": {"type": "integer", "minimum": 1},
    },
    "additionalProperties": False,
}


def connect(url, token):
    # The 2025-11-25 lifecycle: each connection binds the session it starts
    # (under 2026-07-28 a client names it in each request's `_meta`).
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


async def refused(client, tool, args):
    """The error of a call that must be refused."""
    result = await client.call_tool(tool, args)
    if not result.is_error:
        raise RuntimeError(f"{tool} was expected to be refused, got {data(result)}")
    return data(result)["error"]


async def main(url, lead_token, judge_token):
    run = f"{int(time.time())}-{os.getpid()}"
    prefix = f"/data/sv-{run}"
    sup = f"sup-{run}"
    names = {c: f"{c}-{run}" for c in CHAPTERS}
    out = {c: f"{prefix}-{c}.json" for c in CHAPTERS}
    schema = f"{prefix}-schema.json"
    async with connect(url, lead_token) as lead, connect(url, lead_token) as worker, connect(
        url, judge_token
    ) as judge:
        await call(lead, "session_start", {"role": "supervisor", "project": "demo", "name": sup, "budget": {"calls": 60}})
        await call(lead, "files.write", {"path": schema, "content": json.dumps(SCHEMA)})
        for child, text in CHAPTERS.items():
            await call(lead, "files.write", {"path": f"{prefix}-{child}.txt", "content": text})
        print(f"supervisor {sup}: wrote 3 chapters and the output schema")

        # The condition of "done" is the parent's, written before the work starts.
        for child in CHAPTERS:
            spawned = await call(
                lead,
                "session_spawn",
                {
                    "role": "workagent",
                    "name": names[child],
                    "objective": f"count the words of {prefix}-{child}.txt",
                    "success_criteria": [f"{out[child]} holds {{chapter, words}} with the count"],
                    "files": [f"{prefix}-{child}.txt"],
                    "budget": {"calls": 12},
                    "completion": {
                        "gates": [
                            {
                                "tool": "gate.json_schema",
                                "input": {"path": out[child], "schema": schema},
                                "expect": {"passed": True},
                            }
                        ]
                    },
                },
            )
            condition = spawned["child"]["completion"]["condition"]
            assert condition["judge"] is True, condition  # the operator's [[completion]]
            print(f"spawned {names[child]}: gate gate.json_schema, judge required")

        waited = {}

        async def wait():
            waited["result"] = await call(lead, "session_wait", {"timeout_ms": 120000})

        async def work():
            await anyio.sleep(0.3)
            for child in CHAPTERS:
                task = (await call(worker, "session_resume", {"session": names[child]}))["latest_handoff"]["handoff"]
                chapter = (await call(worker, "files.read", {"path": task["files"][0]}))["content"]
                words = (await call(worker, "text.word-count", {"text": chapter}))["words"]
                # w2 gets it wrong first: the count as text, which the schema refuses.
                wrong = child == "w2"
                value = f"{words} words" if wrong else words
                await call(worker, "files.write", {"path": out[child], "content": json.dumps({"chapter": child, "words": value})})
                await call(
                    worker,
                    "session_handoff",
                    {"kind": "workagent_completion", "objective": task["objective"], "work_completed": [f"{child}: {value}"], "to": sup},
                )
                if wrong:
                    error = await refused(worker, "session_end", {"outcome": "completed"})
                    assert error["kind"] == "not_complete", error
                    assert "gate.json_schema" in error["message"], error
                    print(f"{names[child]}: completed refused: {error['message']}")
                    await call(worker, "files.write", {"path": out[child], "content": json.dumps({"chapter": child, "words": words})})
                    await call(
                        worker,
                        "session_handoff",
                        {"kind": "workagent_completion", "objective": task["objective"], "work_completed": [f"{child}: {words} (fixed)"], "to": sup},
                    )
                    print(f"{names[child]}: fixed its output and handed off again")
                else:
                    print(f"{names[child]}: wrote {words} words and handed off")

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            tg.start_soon(work)
        result = waited["result"]
        assert not result["timed_out"], result
        reports = {c["name"]: c["handoff"]["handoff"]["work_completed"] for c in result["children"]}
        assert sorted(reports) == sorted(names.values()), reports
        print(f"supervisor: session_wait returned {len(reports)} reports: {json.dumps(reports)}")

        # The judge: another principal, its own session; it recounts each chapter.
        await call(judge, "session_start", {"role": "judge", "project": "demo", "name": f"judge-{run}"})
        for child in CHAPTERS:
            claimed = json.loads((await call(judge, "files.read", {"path": out[child]}))["content"])
            chapter = (await call(judge, "files.read", {"path": f"{prefix}-{child}.txt"}))["content"]
            counted = (await call(judge, "text.word-count", {"text": chapter}))["words"]
            passed = claimed.get("words") == counted
            verdict = await call(
                judge,
                "session_verdict",
                {
                    "session": names[child],
                    "verdict": "pass" if passed else "fail",
                    "reasons": [f"recounted {counted} words, the claim says {claimed.get('words')}"],
                },
            )
            assert passed, verdict
            print(f"judge: passed {names[child]}'s handoff {verdict['verdict']['handoff_seq']}")

        # Now each child's `completed` holds: its gate runs again and passes, the verdict stands.
        for child in CHAPTERS:
            await call(worker, "session_resume", {"session": names[child]})
            ended = await call(worker, "session_end", {"outcome": "completed"})
            assert ended["outcome"] == "completed", ended
            print(f"{names[child]}: completed")
        children = (await call(lead, "session_list", {"children": True}))["children"]
        assert all(c["outcome"] == "completed" for c in children), children
        await call(lead, "session_end", {"outcome": "completed"})
        print(f"supervisor: all 3 children completed")
        print(f"supervisor: {sup}")


if __name__ == "__main__":
    url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8766/mcp"
    anyio.run(main, url, os.environ["LEAD_TOKEN"], os.environ["JUDGE_TOKEN"])
