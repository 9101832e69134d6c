#!/usr/bin/env bash
# Runs every benchmark of docs/benchmarks.md in one go and prints one table.
#
#   bash docs/run-benchmarks.sh             # dev profile (dependencies optimized): ~4 min
#   bash docs/run-benchmarks.sh --quick     # the same measurements, smaller: ~1 min
#   bash docs/run-benchmarks.sh --release   # the optimized bench profile (a clean build
#                                           # of wasmtime takes ~20 min on 2 cores)
#   GLOVEBOX_BENCH_ONLY=calls,jobs bash docs/run-benchmarks.sh   # some sections only:
#       calls, code, mcp, callers, appends, resume, jobs, memory
#
# It installs bubblewrap if it is missing (apt-get), builds the plugins the benchmark
# loads (as the test suite's build script does), then runs
# `cargo bench -p glovebox-bench --bench compare`. The table goes to stdout, progress to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=(--profile dev)
build_profile=(--profile dev)
for arg in "$@"; do
    case "$arg" in
        --quick) export GLOVEBOX_BENCH_QUICK=1 ;;
        --release) profile=(); build_profile=(--release) ;;
        -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "unknown option \`$arg\` (try --help)" >&2; exit 2 ;;
    esac
done

if ! command -v bwrap >/dev/null 2>&1; then
    echo "run-benchmarks: installing bubblewrap, the sandbox Glovebox is compared with" >&2
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
    if command -v apt-get >/dev/null 2>&1; then
        "${sudo[@]}" apt-get install -y bubblewrap >&2 ||
            { "${sudo[@]}" apt-get update >&2 && "${sudo[@]}" apt-get install -y bubblewrap >&2; } ||
            echo "run-benchmarks: could not install bubblewrap; its row will say so" >&2
    else
        echo "run-benchmarks: no apt-get; install bubblewrap yourself; its row will say so" >&2
    fi
fi

# The plugins (tool and hook components, and the Python ones via componentize-py):
# building the CLI runs tests/build.rs, which builds them all.
cargo build "${build_profile[@]}" --bin glovebox >&2

cargo bench "${profile[@]}" -p glovebox-bench --bench compare
echo
# Code mode (issue 40): a script's nested calls against MCP calls, a table of its own.
cargo bench "${profile[@]}" -p glovebox-bench --bench code_mode
echo
# The egress rules' figure (issue 40): this crate only, a table of its own.
exec cargo bench "${profile[@]}" -p glovebox-manifest --bench egress
