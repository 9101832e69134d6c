#!/usr/bin/env bash
# Runs examples/supervisor/flow.py against Glovebox serving
# examples/supervisor/glovebox.toml over MCP (streamable HTTP), then prints the
# bill with the children under their parent. Builds what it needs (the plugins
# too); installs the Python MCP SDK into target/mcp-flow-venv on first run.
set -euo pipefail
cd "$(dirname "$0")/../.."
port=${GLOVEBOX_PORT:-8766}
venv=target/mcp-flow-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "mcp==2.3.0"
fi
cargo build --quiet --bin glovebox
# A port already taken would send the flow to another server, whose
# principals are not this flow's.
if (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "supervisor flow: port $port is in use; this script starts a server of its own: stop the other one, or give this one another port with GLOVEBOX_PORT=8768" >&2
  exit 2
fi
# The plugins are built by the test build script: `cargo test --no-run` once.
[ -f plugins/target/wasm32-wasip2/release/tool_gate.wasm ] || cargo test --quiet --no-run >/dev/null
# Two principals, declared in a copy of the config beside it (same relative
# paths), with fresh tokens each run: the team's (supervisor and its
# workagents) and the reviewer's (a judge: never the workers' own principal).
flow_config=examples/supervisor/.flow.toml
cp examples/supervisor/glovebox.toml "$flow_config"
glovebox() { ./target/debug/glovebox --config "$flow_config" "$@"; }
lead=$(glovebox principal add team --kind agent --roles supervisor,workagent --projects demo 2>/dev/null)
judge=$(glovebox principal add reviewer --kind agent --roles judge --projects demo 2>/dev/null)
./target/debug/glovebox --config "$flow_config" serve --http "127.0.0.1:$port" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
# The first start compiles the components (a minute or so in a debug build).
for _ in $(seq 1 3000); do
  (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  kill -0 $server 2>/dev/null || { echo "glovebox serve exited" >&2; exit 1; }
  sleep 0.1
done
LEAD_TOKEN="$lead" JUDGE_TOKEN="$judge" "$venv/bin/python" examples/supervisor/flow.py \
  "http://127.0.0.1:$port/mcp" | tee target/supervisor-flow.out
sup=$(sed -n 's/^supervisor: \(sup-.*\)$/\1/p' target/supervisor-flow.out)
# The operator, from a second terminal while the server runs (through its
# control socket): the bill, each family under its parent.
echo "operator: glovebox billing --by family"
glovebox billing --by family
glovebox log verify "$sup"
