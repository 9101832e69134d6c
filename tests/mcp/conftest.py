"""Fixtures for driving `glovebox serve` with the official Python MCP SDK.

The Rust test `tests/all/mcp_sdk.rs` prepares a virtualenv with the `mcp`
package, writes a config with real plugins and hooks, and runs pytest here with:

- GLOVEBOX_BIN: the `glovebox` binary under test;
- GLOVEBOX_CONFIG: the config to serve (echo, text, files; cost and destructive hooks).
"""

import os
import subprocess
from contextlib import contextmanager

import pytest
from glovebox_serve import free_port, serve_http
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
    # The 2025-11-25 lifecycle (`initialize`, an MCP session): what these
    # suites test is a connection's bound session. `test_stateless.py`
    # speaks 2026-07-28.
    return Client(params, read_timeout_seconds=60, mode="legacy")


def start_http_server(glovebox_bin, config):
    """`glovebox serve --http` on a free port, listening: (process, MCP URL)."""
    port = free_port()
    return serve_http(glovebox_bin, config, port), f"http://127.0.0.1:{port}/mcp"


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
