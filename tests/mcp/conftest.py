"""Fixtures for driving `glovebox serve` with the official Python MCP SDK.

The Rust test `tests/all/mcp_sdk.rs` prepares a virtualenv with the `mcp`
package, writes a config with real plugins and hooks, and runs pytest here with:

- GLOVEBOX_BIN: the `glovebox` binary under test;
- GLOVEBOX_CONFIG: the config to serve (echo, text, files; cost and destructive hooks).
"""

import os
import socket
import subprocess
import time
from contextlib import contextmanager

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters


@pytest.fixture
def glovebox_bin():
    return os.environ["GLOVEBOX_BIN"]


@pytest.fixture
def config():
    return os.environ["GLOVEBOX_CONFIG"]


def stdio_client(glovebox_bin, config):
    """An MCP client talking to `glovebox serve` over stdio."""
    params = StdioServerParameters(command=glovebox_bin, args=["--config", config, "serve"])
    return Client(params, read_timeout_seconds=60)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http_server(glovebox_bin, config):
    """`glovebox serve --http` on a free port, listening: (process, MCP URL)."""
    port = free_port()
    proc = subprocess.Popen(
        [glovebox_bin, "--config", config, "serve", "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"glovebox serve --http exited: {proc.stderr.read().decode()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}/mcp"
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("glovebox serve --http did not start listening")


@contextmanager
def http_server(glovebox_bin, config):
    """`glovebox serve --http` on a free port; yields its MCP URL."""
    proc, url = start_http_server(glovebox_bin, config)
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
