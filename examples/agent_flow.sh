#!/usr/bin/env bash
# Runs examples/agent_flow.py against Glovebox serving the example config over
# MCP (streamable HTTP). Builds what it needs; installs the Python MCP SDK into
# target/mcp-flow-venv on first run.
set -euo pipefail
cd "$(dirname "$0")/.."
port=${GLOVEBOX_PORT:-8765}
venv=target/mcp-flow-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "mcp==2.3.0"
fi
cargo build --quiet --bin glovebox
./target/debug/glovebox --config examples/glovebox.toml serve --http "127.0.0.1:$port" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 200); do
  (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
"$venv/bin/python" examples/agent_flow.py "http://127.0.0.1:$port/mcp"
