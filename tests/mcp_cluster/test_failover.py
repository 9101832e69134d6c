"""Failover between two Glovebox nodes on a three-node NATS JetStream cluster,
driven by the official Python MCP SDK over HTTP as an agent would be.

The Rust test `tests/all/nats.rs` starts the cluster and writes the configs;
it runs this file with:

- GLOVEBOX_BIN: the `glovebox` binary under test;
- GLOVEBOX_NODE_A, GLOVEBOX_NODE_B: the two nodes' configs (`node = "a"` and
  `"b"`, `replicas = 3`, a 5 s lease TTL, each advertising its own URL);
- GLOVEBOX_PORT_A, GLOVEBOX_PORT_B: the ports those URLs name;
- GLOVEBOX_OBSERVER: a third config on the same cluster (its own data dir),
  from which the test reads the log with the real CLI, as an operator would.

Node A serves the agent; it is killed with SIGKILL while a call of the
agent and a background job of its session run there. The agent connects to
node B and resumes its session by name: it gets its handoff and the call A
left, marked interrupted; the job is run again on B and completes once for
its idempotency key; the log verifies.
"""

import json
import os
import signal
import subprocess
import time

import anyio
from glovebox_serve import serve_http
from mcp import Client

BIN = os.environ.get("GLOVEBOX_BIN", "")


def structured(result):
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def serve(config, port):
    """`glovebox serve --http` on `port`, once it listens."""
    return serve_http(BIN, config, port)


def observe(*args):
    """A CLI command on the observer's config; its stdout."""
    out = subprocess.run(
        [BIN, "--config", os.environ["GLOVEBOX_OBSERVER"], *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, f"glovebox {args}: {out.stderr}"
    return out.stdout


def events(session):
    return [json.loads(line) for line in observe("log", "export", session).splitlines()]


def of_kind(evs, kind):
    return [e["kind"] for e in evs if e["kind"]["type"] == kind]


def test_an_agent_whose_node_is_killed_mid_call_resumes_its_session_on_another_node():
    port_a, port_b = int(os.environ["GLOVEBOX_PORT_A"]), int(os.environ["GLOVEBOX_PORT_B"])
    url_a, url_b = f"http://127.0.0.1:{port_a}/mcp", f"http://127.0.0.1:{port_b}/mcp"
    node_a = serve(os.environ["GLOVEBOX_NODE_A"], port_a)
    node_b = serve(os.environ["GLOVEBOX_NODE_B"], port_b)
    state = {}
    try:
        anyio.run(on_node_a, url_a, node_a, state)
        anyio.run(on_node_b, url_b, url_a, state)
    finally:
        for proc in (node_a, node_b):
            if proc.poll() is None:
                proc.kill()
            proc.wait()

    # What the log says, read from a third host.
    evs = events("w")
    job_calls = {k["call_id"] for k in of_kind(evs, "call_requested") if k.get("job_id") == state["job"]}
    assert len(job_calls) == 2, evs
    keys = {k["idempotency_key"] for k in of_kind(evs, "call_started") if k["call_id"] in job_calls}
    assert len(keys) == 1, keys
    finished = [k for k in of_kind(evs, "call_finished") if k["call_id"] in job_calls]
    assert [k["outcome"] for k in finished] == ["ok"], finished
    interrupted = [k for k in of_kind(evs, "call_interrupted") if k["call_id"] in job_calls]
    assert len(interrupted) == 1 and "node `a`" in interrupted[0]["reason"], interrupted
    assert observe("log", "verify", "w").startswith("ok")


async def on_node_a(url, node_a, state):
    """The agent on node A: a session with a handoff, a background job and a
    long call; node A is killed while both run."""
    killed = False
    try:
        async with Client(url, read_timeout_seconds=60, mode="legacy") as agent:
            started = await agent.call_tool(
                "session_start", {"role": "workagent", "project": "failover", "name": "w"}
            )
            assert not started.is_error, started
            handed = await agent.call_tool(
                "session_handoff",
                {
                    "kind": "continuation",
                    "objective": "migrate the billing tables",
                    "work_completed": ["schema drafted"],
                    "next_steps": ["copy the rows"],
                },
            )
            assert not handed.is_error, handed
            job = structured(
                await agent.call_tool("job_spawn", {"tool": "sleep.sleep", "input": {"seconds": 8}})
            )
            state["job"] = job["id"]
            deadline = time.time() + 60
            while True:
                status = structured(await agent.call_tool("job_status", {"id": job["id"]}))
                if status["status"] == "running":
                    break
                assert time.time() < deadline, status
                await anyio.sleep(0.1)
            assert status["runner"].startswith("a/"), status

            async def long_call():
                # Node A dies under it: no answer comes (an error, or the
                # cancellation below).
                try:
                    answer = await agent.call_tool("sleep.sleep", {"seconds": 30})
                    state["long_call"] = answer
                except Exception as e:  # the connection is cut
                    state["long_call"] = e

            async with anyio.create_task_group() as tg:
                tg.start_soon(long_call)
                deadline = time.time() + 60
                while not agent_calls(await anyio.to_thread.run_sync(events, "w"), "call_started"):
                    assert time.time() < deadline, "the agent's call never started on node A"
                    await anyio.sleep(0.1)
                # The job is still running on A too.
                assert structured(await agent.call_tool("job_status", {"id": job["id"]}))["status"] == "running"
                node_a.send_signal(signal.SIGKILL)
                node_a.wait()
                killed = True
                await anyio.sleep(0.5)
                tg.cancel_scope.cancel()
    except Exception:
        # The client's connection to the killed node may fail as it closes.
        if not killed:
            raise
    assert killed
    # The long call got no answer from the dead node.
    answer = state.get("long_call")
    assert answer is None or isinstance(answer, Exception), answer


def job_call_ids(evs):
    return {k["call_id"] for k in of_kind(evs, "call_requested") if k.get("job_id")}


def agent_calls(evs, kind):
    """The events of `kind` of the agent's own calls (not its jobs')."""
    jobs = job_call_ids(evs)
    return [k for k in of_kind(evs, kind) if k.get("call_id") and k["call_id"] not in jobs]


async def on_node_b(url, url_a, state):
    """The agent reconnects to node B and resumes its session by name."""
    async with Client(url, read_timeout_seconds=90, mode="legacy") as agent:
        # Until node A's lease expires (2 s from its last renewal), node B
        # says where the session is driven: the agent waits, as told.
        deadline = time.time() + 30
        while True:
            answer = await agent.call_tool("session_resume", {"session": "w"})
            if not answer.is_error:
                break
            error = structured(answer)["error"]
            assert error["kind"] == "session_leased", error
            assert "node `a`" in error["message"] and url_a in error["message"], error
            assert time.time() < deadline, error
            await anyio.sleep(0.25)
        resumed = structured(answer)
        assert resumed["state"]["name"] == "w"
        handoff = resumed["latest_handoff"]["handoff"]
        assert handoff["objective"] == "migrate the billing tables", handoff
        assert handoff["next_steps"] == ["copy the rows"], handoff
        # The agent's own call A left running: marked interrupted, naming A,
        # and safe to re-run (the tool is idempotent).
        jobs = job_call_ids(await anyio.to_thread.run_sync(events, "w"))
        mine = [c for c in resumed["interrupted_calls"] if c["call_id"] not in jobs]
        assert len(mine) == 1, resumed["interrupted_calls"]
        assert mine[0]["tool"] == "sleep.sleep" and mine[0]["started"] and mine[0]["idempotent"], mine
        assert "node `a` stopped driving the session" in mine[0]["reason"], mine

        # The job A was running is run again here, once.
        waited = structured(
            await agent.call_tool("job_wait", {"ids": [state["job"]], "timeout_ms": 60000})
        )
        assert not waited["timed_out"], waited
        done = waited["done"][0]
        assert done["status"] == "completed", done
        assert done["attempts"] == 2, done
        assert done["runner"].startswith("b/"), done
        assert done["result"]["output"]["slept_seconds"] == 8, done

        # The session goes on on B.
        echoed = await agent.call_tool("echo.echo", {"message": "on node b"})
        assert structured(echoed)["message"] == "on node b"


def test_a_stateless_client_carries_on_in_the_same_session_on_another_node():
    """Revision 2026-07-28: the client names its session in each request's
    `_meta`, so nothing ties it to node A. Node A is killed between two
    requests; the next one, sent to node B, runs in the same session once
    A's lease has lapsed (until then B says which node drives it)."""
    session = "io.glovebox/session"
    port_a, port_b = int(os.environ["GLOVEBOX_PORT_A"]), int(os.environ["GLOVEBOX_PORT_B"])
    url_a, url_b = f"http://127.0.0.1:{port_a}/mcp", f"http://127.0.0.1:{port_b}/mcp"
    node_a = serve(os.environ["GLOVEBOX_NODE_A"], port_a)
    node_b = serve(os.environ["GLOVEBOX_NODE_B"], port_b)

    async def on_a():
        async with Client(url_a, read_timeout_seconds=60) as agent:
            assert agent.protocol_version == "2026-07-28"
            started = structured(
                await agent.call_tool("session_start", {"role": "workagent", "project": "failover", "name": "s"})
            )
            echoed = await agent.call_tool("echo.echo", {"message": "on node a"}, meta={session: "s"})
            assert not echoed.is_error, echoed
            return started["id"]

    async def on_b(id):
        async with Client(url_b, read_timeout_seconds=60) as agent:
            deadline = time.time() + 30
            while True:
                answer = await agent.call_tool("echo.echo", {"message": "on node b"}, meta={session: "s"})
                if not answer.is_error:
                    break
                error = structured(answer)["error"]
                assert error["kind"] == "session_leased" and "node `a`" in error["message"], error
                assert time.time() < deadline, error
                await anyio.sleep(0.25)
            status = structured(await agent.call_tool("session_status", {}, meta={session: id}))
            assert status["id"] == id and status["counters"]["calls"] == 2, status

    try:
        id = anyio.run(on_a)
        node_a.send_signal(signal.SIGKILL)
        node_a.wait()
        anyio.run(on_b, id)
    finally:
        for proc in (node_a, node_b):
            if proc.poll() is None:
                proc.kill()
            proc.wait()

    outputs = [json.loads(k["output"])["message"] for k in of_kind(events("s"), "call_finished") if k.get("output")]
    assert outputs == ["on node a", "on node b"], outputs
    assert observe("log", "verify", "s").startswith("ok")
