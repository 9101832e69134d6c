#!/usr/bin/env bash
# Runs examples/code_mode/flow.py: one `code-python.run` whose script calls three tools
# of its session, against Glovebox serving examples/code_mode/glovebox.toml over stdio.
# Builds what it needs (the plugins too); installs the Python MCP SDK into
# target/mcp-flow-venv on first run. Then shows the session's calls, the script's with
# the run that made them.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/mcp-flow-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "mcp==2.3.0"
fi
cargo build --quiet --bin glovebox
# The plugins are built by the test build script: `cargo test --no-run` once.
[ -f plugins/target/wasm32-wasip2/release/code_python.wasm ] || cargo test --quiet --no-run >/dev/null
config=examples/code_mode/glovebox.toml
out=$("$venv/bin/python" examples/code_mode/flow.py ./target/debug/glovebox "$config")
echo "$out"
session=$(echo "$out" | sed -n 's/^session: //p')
echo "the session's log: each call the script made names its run (parent_call)"
./target/debug/glovebox --config "$config" log export "$session" |
  "$venv/bin/python" -c '
import json, sys
for line in sys.stdin:
    kind = json.loads(line)["kind"]
    if kind.get("type") == "call_requested":
        call, tool, by = kind["call_id"], kind["tool"], kind.get("parent_call")
        print("  " + call + "  " + tool.ljust(16) + ("  made by " + by if by else ""))
'
# The file the script wrote (examples/workspace/) is the flow's own: it goes.
rm -f "examples/workspace/${session}.txt"
