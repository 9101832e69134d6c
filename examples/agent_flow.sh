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
# The flow's sessions are an orchestrator's and a supervisor's: more than the
# built-in `local` agent may start. So it runs as an agent principal of its own,
# declared in a copy of the example config beside it (same relative paths),
# with a fresh token each run.
flow_config=examples/.agent-flow.toml
cp examples/glovebox.toml "$flow_config"
token=$(./target/debug/glovebox --config "$flow_config" principal add flow --kind agent \
  --roles orchestrator,supervisor,workagent --projects demo 2>/dev/null)
./target/debug/glovebox --config "$flow_config" serve --http "127.0.0.1:$port" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 200); do
  (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
# The operator, as from a second terminal while the server runs: the flow's
# destructive write waits for approval; `glovebox approvals` lists it (through
# the server's control socket) and `glovebox approve` runs it.
# Approvals an earlier run left pending in the data dir are not this flow's.
ids() { ./target/debug/glovebox --config "$flow_config" approvals --json 2>/dev/null |
  "$venv/bin/python" -c 'import json,sys; print(" ".join(a["id"] for a in json.load(sys.stdin)))'; }
earlier=" $(ids) "
(
  for _ in $(seq 1 600); do
    id=""
    for pending in $(ids); do
      case "$earlier" in *" $pending "*) ;; *) id=$pending; break ;; esac
    done
    if [ -n "$id" ]; then
      echo "operator: glovebox approve $id"
      ./target/debug/glovebox --config "$flow_config" approve "$id" >/dev/null
      break
    fi
    sleep 0.2
  done
) &
GLOVEBOX_TOKEN="$token" "$venv/bin/python" examples/agent_flow.py "http://127.0.0.1:$port/mcp"
