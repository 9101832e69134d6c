"""Child sessions over HTTP, driven by the official Python SDK: a supervisor
spawns workagents, each child's agent works on its own connection and posts
its completion handoff while the supervisor's `session_wait` waits (woken by
the handoffs, not by its timeout), and the wait returns every child's report.

The config is a copy of GLOVEBOX_CONFIG with the agent `boss` (supervisor and
workagent, project demo) and a data dir of its own.
"""

import time
import uuid
from pathlib import Path

import anyio
import pytest

from conftest import http_server
from test_principals import add, client, structured


@pytest.fixture
def boss(glovebox_bin, config):
    base = Path(config)
    mine = base.with_name(f"children-{uuid.uuid4().hex[:8]}.toml")
    mine.write_text(base.read_text().replace('data_dir = "data"', f'data_dir = "data-{mine.stem}"'))
    token = add(glovebox_bin, str(mine), "boss", "--kind", "agent", "--roles", "supervisor,workagent", "--projects", "demo")
    return str(mine), token


def test_a_supervisor_spawns_workagents_and_its_wait_returns_their_reports(glovebox_bin, boss):
    config, token = boss

    async def main(url):
        async with client(url, token) as lead, client(url, token) as worker:
            await lead.call_tool(
                "session_start", {"role": "supervisor", "project": "demo", "name": "lead", "budget": {"calls": 10}}
            )
            kids = []
            for name in ("w1", "w2"):
                spawned = structured(
                    await lead.call_tool(
                        "session_spawn",
                        {
                            "role": "workagent",
                            "name": name,
                            "objective": f"count the words of {name}.md",
                            "success_criteria": ["a number"],
                            "budget": {"calls": 4},
                        },
                    )
                )
                kids.append(spawned["child"]["id"])
            # 8 of the parent's 10 calls are carved out: a child of 5 does not fit.
            over = await lead.call_tool("session_spawn", {"role": "workagent", "objective": "x", "budget": {"calls": 5}})
            assert over.is_error, over
            assert "beyond its parent's budget" in structured(over)["error"]["message"]

            waited = {}

            async def wait():
                began = time.monotonic()
                waited["result"] = structured(await lead.call_tool("session_wait", {"timeout_ms": 60000}))
                waited["took"] = time.monotonic() - began

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait)
                await anyio.sleep(0.5)
                for name in ("w1", "w2"):
                    resumed = structured(await worker.call_tool("session_resume", {"session": name}))
                    assert resumed["latest_handoff"]["handoff"]["kind"] == "task", resumed
                    done = await worker.call_tool(
                        "session_handoff",
                        {
                            "kind": "workagent_completion",
                            "objective": f"count the words of {name}.md",
                            "work_completed": [f"{name}: 42 words"],
                            "to": "lead",
                        },
                    )
                    assert not done.is_error, done
            result = waited["result"]
            assert not result["timed_out"], result
            assert waited["took"] < 30, waited
            assert sorted(c["id"] for c in result["children"]) == sorted(kids)
            reports = sorted(c["handoff"]["handoff"]["work_completed"][0] for c in result["children"])
            assert reports == ["w1: 42 words", "w2: 42 words"]
            listed = structured(await lead.call_tool("session_list", {"children": True}))["children"]
            assert all(c["settled"] for c in listed), listed
            ended = structured(await lead.call_tool("session_end", {"cancel_children": True}))
            assert ended["status"] == "completed", ended
            assert sorted(ended["cancelled_children"]) == sorted(kids)

    with http_server(glovebox_bin, config) as url:
        anyio.run(main, url)
