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
# The flow needs a server of its own (with the agent principal below): a port
# already taken (say, by the README's first command) would send the flow to
# another server, whose principals are not this flow's.
if (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "agent_flow: port $port is in use (the README's first command still serving?); this script starts a server of its own: stop the other one, or give this one another port with GLOVEBOX_PORT=8767" >&2
  exit 2
fi
# The flow's sessions are an orchestrator's and a supervisor's: more than the
# built-in `local` agent may start. So it runs as an agent principal of its own,
# declared in a copy of the example config beside it (same relative paths),
# with a fresh token each run, and a data dir of its own, so that it runs
# beside a server of the example config itself (on another port).
flow_config=examples/.agent-flow.toml
sed 's/^data_dir = ".glovebox-data"$/data_dir = ".agent-flow-data"/' examples/glovebox.toml > "$flow_config"
if ! grep -q '^data_dir = ".agent-flow-data"$' "$flow_config"; then
  echo "agent_flow: examples/glovebox.toml no longer says data_dir = \".glovebox-data\": update this script's data dir line" >&2
  exit 2
fi
token=$(./target/debug/glovebox --config "$flow_config" principal add flow --kind agent \
  --roles orchestrator,supervisor,workagent --projects demo 2>/dev/null)
./target/debug/glovebox --config "$flow_config" serve --http "127.0.0.1:$port" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
# Its first start compiles the example plugins into its data dir's cache (a
# minute or two here, with its progress on stderr); later starts take seconds.
for _ in $(seq 1 6000); do
  (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
if ! kill -0 "$server" 2>/dev/null; then
  echo "agent_flow: the server did not start (its error is above)" >&2
  exit 1
fi
if ! (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "agent_flow: the server is not listening on port $port after 10 minutes" >&2
  exit 1
fi
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
