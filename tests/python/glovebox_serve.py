"""Starting `glovebox serve --http` for the Python suites (`tests/mcp/`,
`tests/mcp_cluster/`): one way to start a server and wait until it listens.
The Rust helper `tests/all/mcp_sdk.rs::pytest` puts this directory on
PYTHONPATH.
"""

import socket
import subprocess
import time


def free_port():
    """A free loopback port (bound, then let go, for a server to take)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_http(glovebox_bin, config, port):
    """`glovebox serve --http` on `port`, once it listens: the process."""
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
                return proc
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"glovebox serve --http on port {port} did not start listening")
