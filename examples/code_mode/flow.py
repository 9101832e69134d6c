"""Code mode: one call of `code-python.run` whose script calls three tools of the session.

The agent (here a script with the official Python MCP SDK, over stdio) starts a
workagent session and sends one Python script. Inside that one run the script reads a
file (`files.read`), upper-cases it (`text.upper`) and writes the result
(`files.write`): three calls of the session, each judged by the hooks and logged with a
link to the run. It also tries a tool its role may not use (`echo.echo`): the hook's
denial reaches the script as `ToolDenied`, which it catches.

Run it with `bash examples/code_mode/flow.sh`, or directly:

    python examples/code_mode/flow.py path/to/glovebox examples/code_mode/glovebox.toml
"""

import json
import sys
import time

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

SCRIPT = """
from glovebox import ToolDenied
text = tools.call("files.read", {"path": "/data/README.txt"})["content"]
upper = tools.call("text.upper", {"text": text})["text"]
written = tools.call("files.write", {"path": OUT, "content": upper})["written"]
try:
    tools.call("echo.echo", {"message": "a workagent may not echo"})
    echo = "ran"
except ToolDenied as e:
    echo = "denied: " + e.reason
{"written": written, "to": OUT, "echo": echo, "first_line": upper.splitlines()[0]}
"""


async def main(glovebox, config):
    params = StdioServerParameters(command=glovebox, args=["--config", config, "serve"])
    out = f"/data/code-mode-{int(time.time())}.txt"
    async with Client(params, read_timeout_seconds=120, mode="legacy") as agent:
        started = await agent.call_tool(
            "session_start", {"role": "workagent", "project": "demo", "name": out[6:-4]}
        )
        if started.is_error:
            raise RuntimeError(f"session_start failed: {started.content[0].text}")
        result = await agent.call_tool("code-python.run", {"code": f"OUT = {out!r}\n" + SCRIPT})
        if result.is_error:
            raise RuntimeError(f"the run failed: {result.content[0].text}")
        report = result.structured_content
        if report.get("error"):
            raise RuntimeError(f"the script failed:\n{report['error']}")
        print("one run, three tools:", json.dumps(report["value"]))
        print(f"session: {out[6:-4]}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: flow.py GLOVEBOX_BINARY CONFIG")
    anyio.run(main, sys.argv[1], sys.argv[2])
