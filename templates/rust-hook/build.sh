#!/bin/sh
# Builds the component build/{{name}}.wasm. Installs the `wasm32-wasip2` target with
# rustup when it is missing; a shared CARGO_TARGET_DIR is honoured.
set -eu
cd "$(dirname "$0")"
if ! command -v cargo >/dev/null 2>&1; then
    echo "error: cargo not found: install Rust (https://rustup.rs), then run ./build.sh again" >&2
    exit 1
fi
if command -v rustup >/dev/null 2>&1; then
    if ! rustup target list --installed | grep -qx wasm32-wasip2; then
        rustup target add wasm32-wasip2
    fi
fi
cargo build --release --target wasm32-wasip2
mkdir -p build
cp "${CARGO_TARGET_DIR:-target}/wasm32-wasip2/release/{{crate}}.wasm" build/{{name}}.wasm
echo "built build/{{name}}.wasm"
